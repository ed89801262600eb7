/* ilir_int.h — declarations shared by the files of ilir/. */
#ifndef CTX_ILIR_INT_H
#define CTX_ILIR_INT_H

#include "ilir/ilir.h"

/* The element type buffers of [kind] hold. */
IlirType ilir_buf_type(IlirBufKind kind);

#endif
