/* driver_build.h — the parts of `ctx build` (driver_build.c: the verb, the
 * tools it runs; driver_build_src.c: the sources it writes). */
#ifndef CTX_DRIVER_BUILD_H
#define CTX_DRIVER_BUILD_H

#include "driver/driver.h"
#include "driver/driver_jit.h"

typedef struct {
  CtxSession *s;
  const RaProgram *p;
  IlirKernel *k;
  CtxModelDesc desc;
  const char *dir;
  const char *name; /* the model's name: the prefix of every symbol */
  char *upper;      /* the same in upper case (macros) */
  char *ptx;        /* --target cuda: the kernel's PTX */
  CtxRuntime rt;    /* the libctxrt.a and ctxrt.h it links */
  char *kernel_part; /* the kernel's second object (NAME_kernel_part.o), or NULL */
} CtxBuild;

/* NAME.h: the documented API of the library [b] builds, into [h]. */
void ctx_build_header(CtxBuf *h, const CtxBuild *b);

/* NAME_model.c: the model's descriptor and the API as thin wrappers over
 * ctxrt_model_*, into [c]. */
void ctx_build_model_source(CtxBuf *c, const CtxBuild *b);

/* Writes the static library [out]: the objects among [inputs] and every
 * member of the archives among them, with the symbol index linkers read
 * (driver_archive.c). After an error, false and [*error] says what failed
 * (malloc'd). */
bool ctx_archive_write(const char *out, const char *const *inputs, int n, char **error);

#endif
