/* ilir_int.h — declarations shared by the files of ilir/. */
#ifndef CTX_ILIR_INT_H
#define CTX_ILIR_INT_H

#include "ilir/ilir.h"

/* Expression constructors (ilir_expr.c); integer arithmetic on constants
 * folds. */
IlirExpr *ilir_const_i(CtxArena *a, long v);
IlirExpr *ilir_const_f(CtxArena *a, float v);
IlirExpr *ilir_var(CtxArena *a, IlirVar *v);
IlirExpr *ilir_arg(CtxArena *a, long which);
IlirExpr *ilir_load(CtxArena *a, const IlirKernel *k, int buf, IlirExpr *index);
IlirExpr *ilir_unary(CtxArena *a, int op, IlirExpr *x);
IlirExpr *ilir_binary(CtxArena *a, int op, IlirExpr *x, IlirExpr *y);
IlirExpr *ilir_select(CtxArena *a, IlirExpr *c, IlirExpr *x, IlirExpr *y);
IlirExpr *ilir_to_f32(CtxArena *a, IlirExpr *x);
IlirExpr *ilir_reduce(CtxArena *a, int op, IlirVar *v, IlirExpr *lo, IlirExpr *hi,
                      IlirExpr *body);
IlirVar *ilir_new_var(CtxArena *a, IlirKernel *k, const char *name);
IlirStmt *ilir_loop(CtxArena *a, IlirVar *v, IlirExpr *lo, IlirExpr *hi, IlirLoopKind kind,
                    IlirBlock body);
IlirStmt *ilir_store(CtxArena *a, int buf, IlirExpr *index, IlirExpr *value);
/* The default loop transformations (ilir_interchange.c): reductions whose
 * reads run down columns accumulate with the reduction loop outside. */
void ilir_interchange(CtxArena *arena, IlirKernel *k);

/* The element type buffers of [kind] hold. */
IlirType ilir_buf_type(IlirBufKind kind);

#endif
