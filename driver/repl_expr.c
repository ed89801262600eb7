/* repl_expr.c — `let x = EXPR` and bare expressions at ctx repl's prompt,
 * JIT-compiled and called through libffi.
 *
 *   the line, source <repl:N> --ast_parse_stmt--> a let or an expression
 *   the model's dims, params, defs and uses + the session's variables (as
 *   params) + a one-element sequence and
 *       rec __repl(n: __t) -> T { LINE; return VALUE }
 *   --sema--> T (a first pass with `-> f32 { LINE; let __v = VALUE; return 0 }`
 *   finds it: the user's errors are reported there, against their line)
 *   --RA, ILIR (no register tiles: nothing to pack), codegen--> a kernel
 *   wrapped in a C function of the expression's own signature (CgCall):
 *       float|void f(const float *p0 | float p0, ..., float *out0, ...)
 *   with one parameter per parameter or variable the expression reads
 *   (a scalar by value), one float* per result field, or a scalar returned
 *   --libffi: an ffi_cif built from that signature, ffi_call--> the values
 *
 * Where it is cheap (the parameters read hold at most CHECK_ELEMS floats)
 * the same program runs on the float64 interpreter and a value outside the
 * float32 tolerances is reported. Everything is made in a session of its own,
 * freed with its JIT module before repl_eval returns; only the values the
 * `let` binds stay (ReplVar).
 */
#include "driver/repl.h"

#include <ffi.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Interpreter cross-check only while converting the parameters is cheap. */
enum { CHECK_ELEMS = 1 << 20, SHOW_VALUES = 8, SHOW_ROWS = 5 };

/* RA options off for the one-node kernel: no packed weights (the call has no
 * loader to pack them), nothing a one-node level would not gain from. */
#define EXPR_DISABLED                                                                   \
  (RA_OPT_REGISTER_TILE | RA_OPT_HOIST_PRODUCTS | RA_OPT_DENSE_SCRATCH |               \
   RA_OPT_SPECIALIZE_LEAF | RA_OPT_HOIST_INVARIANT | RA_OPT_FUSE_EPILOGUE)

typedef struct {
  Repl *R;
  ReplBuild b;         /* the session (sources, diagnostics, arena) */
  const AstStmt *stmt; /* the line */
  AstExpr *value;      /* what it evaluates to */
  const SemaType *type;
} Expr;

/* ---- synthetic AST ----------------------------------------------------------------- */

static AstExpr *name_expr(CtxArena *a, const char *id, CtxSpan span) {
  AstExpr *e = CTX_NEW(a, AstExpr);
  e->kind = AST_NAME;
  e->span = span;
  e->u.name.id = id;
  return e;
}

static AstExpr *number_expr(CtxArena *a, long v) {
  AstExpr *e = CTX_NEW(a, AstExpr);
  e->kind = AST_NUMBER;
  e->u.num.value = (double)v;
  e->u.num.is_int = true;
  e->u.num.text = ctx_arena_printf(a, "%ld", v);
  return e;
}

static AstExpr *call_expr(CtxArena *a, const char *callee, AstExpr *arg) {
  AstExpr *e = CTX_NEW(a, AstExpr);
  e->kind = AST_CALL;
  e->u.call.callee = callee;
  e->u.call.args = CTX_NEW(a, AstExpr *);
  e->u.call.args[0] = arg;
  e->u.call.nargs = 1;
  return e;
}

static AstItem *item(CtxArena *a, AstItemKind kind, const char *name) {
  AstItem *it = CTX_NEW(a, AstItem);
  it->kind = kind;
  it->name.id = name;
  return it;
}

static AstType *tensor_type(CtxArena *a, int rank, const long *dims) {
  AstType *t = CTX_NEW(a, AstType);
  t->kind = AST_TYPE_F32;
  t->ndims = rank;
  t->dims = CTX_NEW_ARRAY(a, AstExpr *, rank + 1);
  for (int d = 0; d < rank; d++) t->dims[d] = number_expr(a, dims[d]);
  return t;
}

/* The AST spelling of the tensor or tuple type [t] (fields named as in [t],
 * else f0, f1, ...). */
static AstType *type_of(CtxArena *a, const SemaType *t) {
  if (t->kind == SEMA_TENSOR) return tensor_type(a, t->rank, t->dims);
  AstType *tt = CTX_NEW(a, AstType);
  tt->kind = AST_TYPE_TUPLE;
  tt->nfields = t->nfields;
  tt->fields = CTX_NEW_ARRAY(a, AstField, t->nfields);
  for (int i = 0; i < t->nfields; i++) {
    const char *n = t->names && t->names[i] ? t->names[i] : ctx_arena_printf(a, "f%d", i);
    tt->fields[i].name = n;
    tt->fields[i].type = type_of(a, t->fields[i]);
  }
  return tt;
}

static AstStmt *let_stmt(CtxArena *a, const char *name, AstExpr *value) {
  AstStmt *s = CTX_NEW(a, AstStmt);
  s->kind = AST_LET;
  s->u.let.names = CTX_NEW(a, AstIdent);
  s->u.let.names[0].id = name;
  s->u.let.nnames = 1;
  s->u.let.value = value;
  return s;
}

static AstStmt *return_stmt(CtxArena *a, AstExpr *value) {
  AstStmt *s = CTX_NEW(a, AstStmt);
  s->kind = AST_RETURN;
  s->u.ret.value = value;
  return s;
}

static bool model_has(const AstFile *model, const char *name) {
  for (int k = 0; k < model->nitems; k++) {
    const AstItem *it = model->items[k];
    if (it->name.id && it->kind != AST_USE && strcmp(it->name.id, name) == 0) return true;
  }
  return false;
}

/* The program around the line: the model's dims, params, defs and uses, the
 * variables as params, and `rec __repl(n: __t) -> [result] { [body] }` as
 * the output of a sequence model. */
static AstFile *program(Expr *X, AstType *result, AstStmt **body, int nbody) {
  CtxArena *a = X->b.s.arena;
  const AstFile *model = X->b.file;
  CtxVec items = {0};
  ctx_vec_push(a, &items, item(a, AST_MODEL, "repl"));
  for (int i = 0; i < model->nitems; i++) {
    AstItemKind k = model->items[i]->kind;
    if (k == AST_DIM || k == AST_PARAM || k == AST_DEF || k == AST_USE)
      ctx_vec_push(a, &items, model->items[i]);
  }
  for (int i = 0; i < X->R->nvars; i++) {
    const ReplVar *v = &X->R->vars[i];
    if (model_has(model, v->name)) continue; /* a later model took the name */
    AstItem *p = item(a, AST_PARAM, v->name);
    p->type = tensor_type(a, v->rank, v->dims);
    ctx_vec_push(a, &items, p);
  }
  AstItem *in = item(a, AST_INPUT, "__t");
  in->type = CTX_NEW(a, AstType);
  in->type->kind = AST_TYPE_SEQUENCE;
  ctx_vec_push(a, &items, in);
  AstItem *rec = item(a, AST_REC, "__repl");
  rec->params = CTX_NEW(a, AstField);
  rec->params[0].name = "__n";
  rec->nparams = 1;
  rec->domain.id = "__t";
  rec->type = result;
  rec->body.stmts = body;
  rec->body.n = nbody;
  ctx_vec_push(a, &items, rec);
  AstItem *out = item(a, AST_OUTPUT, NULL);
  out->value = call_expr(a, "__repl", call_expr(a, "root", name_expr(a, "__t", (CtxSpan){0})));
  if (result->kind == AST_TYPE_TUPLE) {
    AstExpr *m = CTX_NEW(a, AstExpr);
    m->kind = AST_MEMBER;
    m->u.member.base = out->value;
    m->u.member.field = result->fields[0].name;
    out->value = m;
  }
  ctx_vec_push(a, &items, out);
  AstFile *f = CTX_NEW(a, AstFile);
  f->file = model->file;
  f->items = (AstItem **)items.items;
  f->nitems = items.len;
  return f;
}

static SemaModel *check(Expr *X, AstFile *f) {
  CtxSession *s = &X->b.s;
  int nfiles;
  AstFile **files = ctx_pipeline_imports(s, f, &nfiles);
  SemaModel *m = files ? sema_check(s->arena, &s->diag, files, nfiles, s->opts.defines,
                                    s->opts.ndefines)
                       : NULL;
  return m && !s->diag.errors ? m : NULL;
}

static bool is_f32(const SemaType *t) { return t->kind == SEMA_TENSOR && t->elem == SEMA_F32; }

/* The first pass: the user's errors, and the type of the value. */
static bool find_type(Expr *X) {
  CtxArena *a = X->b.s.arena;
  AstStmt *body[3];
  int n = 0;
  if (X->stmt->kind == AST_LET) body[n++] = (AstStmt *)X->stmt;
  body[n++] = let_stmt(a, "__v", X->value);
  body[n++] = return_stmt(a, number_expr(a, 0));
  AstType *f32 = tensor_type(a, 0, NULL);
  SemaModel *m = check(X, program(X, f32, body, n));
  if (!m) return false;
  X->type = sema_type_of(m, X->value);
  if (!X->type) return false;
  bool ok = is_f32(X->type);
  for (int i = 0; X->type->kind == SEMA_TUPLE && i < X->type->nfields; i++)
    ok = is_f32(X->type->fields[i]) && (i > 0 ? ok : true);
  if (X->type->kind == SEMA_INT && X->type->is_const && X->stmt->kind != AST_LET) {
    fprintf(X->R->out, "= %ld (an integer)\n", X->type->value);
    return false;
  }
  if (!ok) {
    CtxBuf t;
    ctx_buf_init(&t);
    sema_print_type(&t, X->type);
    ctx_diag_error(&X->b.s.diag, X->value->span, "only f32 tensors and tuples of them are "
                   "evaluated at the prompt, found %s", ctx_buf_str(&t));
    ctx_buf_free(&t);
  }
  return ok;
}

/* ---- the signature and the call ---------------------------------------------------- */

static void mark_reads(const RaExpr *e, bool *read) {
  if (!e) return;
  if (e->kind == RA_READ && e->src == RA_SRC_PARAM) read[e->index] = true;
  mark_reads(e->a, read);
  mark_reads(e->b, read);
  mark_reads(e->c, read);
  mark_reads(e->dep, read);
  for (int i = 0; i < e->nidx; i++) mark_reads(e->idx[i], read);
}

typedef struct {
  CgCall call;
  void **data;       /* per argument: the floats it points to (outputs: malloc'd) */
  ffi_type **types;
  int nin;           /* arguments before the outputs */
  float ret;
} Signature;

/* The parameter [k] of the program: a model weight or a variable. */
static float *param_data(Expr *X, const RaProgram *p, int k) {
  const ReplVar *v = repl_var(X->R, p->params[k].name);
  if (v) return v->data;
  return ctxrt_weights_find(X->R->weights, p->params[k].name)->data;
}

static void build_signature(Expr *X, const RaProgram *p, const IlirKernel *k, Signature *S) {
  CtxArena *a = X->b.s.arena;
  bool *read = CTX_NEW_ARRAY(a, bool, p->nparams + 1);
  const RaFunc *fn = &p->funcs[p->out_func];
  for (int f = 0; f < p->nfuncs; f++)
    for (int o = 0; o < p->funcs[f].nops; o++) mark_reads(p->funcs[f].ops[o]->body, read);
  int cap = p->nparams + fn->nfields + 1;
  CgArgKind *args = CTX_NEW_ARRAY(a, CgArgKind, cap);
  int *buf_arg = CTX_NEW_ARRAY(a, int, k->nbufs + 1);
  S->data = CTX_NEW_ARRAY(a, void *, cap);
  S->types = CTX_NEW_ARRAY(a, ffi_type *, cap);
  int n = 0;
  for (int b = 0; b < k->nbufs; b++) {
    buf_arg[b] = -1;
    int i = k->bufs[b].index;
    if (k->bufs[b].kind != ILIR_BUF_PARAM || !read[i]) continue;
    bool scalar = p->params[i].shape.rank == 0;
    args[n] = scalar ? CG_ARG_F32 : CG_ARG_PTR;
    S->types[n] = scalar ? &ffi_type_float : &ffi_type_pointer;
    S->data[n] = param_data(X, p, i);
    buf_arg[b] = n++;
  }
  S->nin = n;
  long *off = CTX_NEW_ARRAY(a, long, fn->nfields), *size = CTX_NEW_ARRAY(a, long, fn->nfields);
  int *res_arg = CTX_NEW_ARRAY(a, int, fn->nfields);
  bool returned = fn->nfields == 1 && fn->fields[0].rank == 0;
  for (int r = 0, at = 0; r < fn->nfields; at += (int)fn->fields[r].size, r++) {
    off[r] = at;
    size[r] = fn->fields[r].size;
    res_arg[r] = returned ? -1 : n;
    if (returned) continue;
    args[n] = CG_ARG_PTR;
    S->types[n] = &ffi_type_pointer;
    S->data[n++] = ctx_xmalloc(sizeof(float) * (size_t)(size[r] + 1));
  }
  S->call = (CgCall){"ctx_repl_call", n, args, buf_arg, fn->nfields, off, size, res_arg};
}

/* Calls the compiled function through libffi; false after printing why. */
static bool ffi_invoke(Expr *X, void *entry, Signature *S) {
  ffi_cif cif;
  int n = S->call.nargs;
  bool returns = S->call.nresults == 1 && S->call.res_arg[0] < 0;
  if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, (unsigned)n, returns ? &ffi_type_float : &ffi_type_void,
                   S->types) != FFI_OK) {
    repl_error(X->R, "libffi cannot make a call of %d arguments", n);
    return false;
  }
  void **values = ctx_xmalloc(sizeof *values * (size_t)(n + 1));
  for (int i = 0; i < n; i++)
    values[i] = S->call.args[i] == CG_ARG_F32 ? S->data[i] : (void *)&S->data[i];
  float ret = 0;
  ffi_call(&cif, FFI_FN(entry), returns ? (void *)&ret : NULL, values);
  free(values);
  S->ret = ret;
  return true;
}

/* The value of result [r] (S->ret for a returned scalar). */
static float *result(Signature *S, int r) {
  return S->call.res_arg[r] < 0 ? &S->ret : (float *)S->data[S->call.res_arg[r]];
}

/* ---- the interpreter's opinion ------------------------------------------------------ */

/* Runs [p] on the float64 interpreter and reports where field 0 of the
 * result differs from [got] beyond the float32 tolerances (docs/testing.md).
 * Skipped when the parameters read are large. */
static void cross_check(Expr *X, const RaProgram *p, const Signature *S, const float *got) {
  int64_t elems = 0;
  double **params = ctx_xmalloc(sizeof *params * (size_t)(p->nparams + 1));
  for (int k = 0; k < p->nparams; k++) params[k] = NULL;
  bool cheap = true;
  for (int k = 0; k < p->nparams && cheap; k++) {
    const float *src = param_data(X, p, k);
    bool used = false;
    for (int i = 0; i < S->nin && !used; i++) used = S->data[i] == src;
    if (!used) continue;
    elems += p->params[k].shape.size;
    cheap = elems <= CHECK_ELEMS;
    params[k] = ctx_xmalloc(sizeof(double) * (size_t)(p->params[k].shape.size + 1));
    for (long e = 0; e < p->params[k].shape.size; e++) params[k][e] = src[e];
  }
  CtxrtGenSpec g = {CTXRT_GEN_SEQUENCE, 1, 0, 1, 0, 0, 0, CTXRT_GEN_VALUES_DEFAULT};
  CtxrtForest *f = NULL;
  double *rows = NULL;
  int64_t n = 0;
  CtxrtError err;
  if (cheap && !ctxrt_generate(&g, &f, &err) &&
      !ra_interp_run(p, f, (const double *const *)params, false, &rows, &n, &err) && n == 1) {
    long worst = -1;
    double excess = 0;
    for (long e = 0; e < p->out_shape.size; e++) {
      double d = fabs((double)got[e] - rows[e]) - (1e-5 + 1e-4 * fabs(rows[e]));
      if (d > excess) excess = d, worst = e;
    }
    if (worst >= 0)
      fprintf(X->R->err, "warning: the JIT's value differs from the interpreter's at element "
              "%ld: %.9g vs %.9g\n", worst, (double)got[worst], rows[worst]);
  }
  free(rows);
  ctxrt_forest_destroy(f);
  for (int k = 0; k < p->nparams; k++) free(params[k]);
  free(params);
}

/* ---- values ----------------------------------------------------------------------------- */

const ReplVar *repl_var(const Repl *R, const char *name) {
  for (int i = 0; i < R->nvars; i++)
    if (strcmp(R->vars[i].name, name) == 0) return &R->vars[i];
  return NULL;
}

void repl_vars_free(Repl *R) {
  for (int i = 0; i < R->nvars; i++) {
    free(R->vars[i].name);
    free(R->vars[i].data);
  }
  free(R->vars);
  R->vars = NULL;
  R->nvars = 0;
}

/* Binds [name] to a copy of [data] of type [t] (replacing an older value). */
static void bind(Repl *R, const char *name, const SemaType *t, const float *data) {
  ReplVar *v = (ReplVar *)repl_var(R, name);
  if (!v) {
    R->vars = ctx_xrealloc(R->vars, sizeof *R->vars * (size_t)(R->nvars + 1));
    v = &R->vars[R->nvars++];
    v->name = ctx_xmalloc(strlen(name) + 1);
    strcpy(v->name, name);
  } else {
    free(v->data);
  }
  v->rank = t->rank;
  v->size = 1;
  for (int d = 0; d < t->rank; d++) v->dims[d] = t->dims[d], v->size *= t->dims[d];
  v->data = ctx_xmalloc(sizeof(float) * (size_t)(v->size + 1));
  memcpy(v->data, data, sizeof(float) * (size_t)v->size);
}

/*   x : f32[768] = [0.01 -0.04 ... ] norm=1.59      (vectors)
 *   W : f32[4, 4] norm=0.3                          (then rows: [0] ...) */
static void print_value(FILE *out, const char *label, const SemaType *t, const float *data) {
  CtxBuf ty;
  ctx_buf_init(&ty);
  sema_print_type(&ty, t);
  long size = 1, row = t->rank ? 1 : 1;
  for (int d = 0; d < t->rank; d++) size *= t->dims[d];
  for (int d = 1; d < t->rank; d++) row *= t->dims[d];
  double norm = 0;
  for (long i = 0; i < size; i++) norm += (double)data[i] * data[i];
  fprintf(out, "%s%s%s", label ? label : "", label ? " : " : "", ctx_buf_str(&ty));
  ctx_buf_free(&ty);
  if (t->rank == 0) {
    fprintf(out, " = %.4g\n", data[0]);
  } else if (t->rank == 1) {
    fputs(" = [", out);
    for (long i = 0; i < size && i < SHOW_VALUES; i++) fprintf(out, "%s%.4g", i ? " " : "", data[i]);
    fprintf(out, "%s] norm=%.4g\n", size > SHOW_VALUES ? " ..." : "", sqrt(norm));
  } else {
    fprintf(out, " norm=%.4g\n", sqrt(norm));
    for (long r = 0; r < t->dims[0] && r < SHOW_ROWS; r++) {
      fprintf(out, "  [%ld]", r);
      for (long i = 0; i < row && i < SHOW_VALUES; i++) fprintf(out, " %.4g", data[r * row + i]);
      fputs(row > SHOW_VALUES ? " ...\n" : "\n", out);
    }
    if (t->dims[0] > SHOW_ROWS)
      fprintf(out, "  ... (%ld more rows)\n", t->dims[0] - SHOW_ROWS);
  }
}

/* Prints the values, or binds them for a `let`. */
static void deliver(Expr *X, Signature *S) {
  const SemaType *t = X->type;
  int nf = t->kind == SEMA_TUPLE ? t->nfields : 1;
  for (int r = 0; r < nf; r++) {
    const SemaType *ft = t->kind == SEMA_TUPLE ? t->fields[r] : t;
    const char *label = t->kind == SEMA_TUPLE && t->names && t->names[r] ? t->names[r] : NULL;
    if (X->stmt->kind == AST_LET) {
      label = X->stmt->u.let.names[r].id;
      bind(X->R, label, ft, result(S, r));
    }
    print_value(X->R->out, label, ft, result(S, r));
  }
}

/* ---- the line ------------------------------------------------------------------------------ */

/* What [X->stmt] evaluates to, and checks of its names; false after an error. */
static bool value_of(Expr *X) {
  CtxArena *a = X->b.s.arena;
  CtxDiag *diag = &X->b.s.diag;
  const AstStmt *st = X->stmt;
  if (st->kind == AST_RETURN) {
    X->value = st->u.ret.value;
    return true;
  }
  if (st->kind != AST_LET) {
    ctx_diag_error(diag, st->span, "only 'let' and expressions are evaluated at the prompt");
    return false;
  }
  for (int i = 0; i < st->u.let.nnames; i++) {
    const AstIdent *id = &st->u.let.names[i];
    if (model_has(X->b.file, id->id)) {
      ctx_diag_error(diag, id->span, "'%s' is a name of the model; 'let' another", id->id);
      return false;
    }
    if (strncmp(id->id, "__", 2) == 0) {
      ctx_diag_error(diag, id->span, "names starting with '__' are the prompt's own");
      return false;
    }
  }
  if (st->u.let.nnames == 1) {
    X->value = name_expr(a, st->u.let.names[0].id, st->u.let.names[0].span);
    return true;
  }
  AstExpr *tuple = CTX_NEW(a, AstExpr);
  tuple->kind = AST_TUPLE;
  tuple->span = st->span;
  tuple->u.list.n = st->u.let.nnames;
  tuple->u.list.elems = CTX_NEW_ARRAY(a, AstExpr *, st->u.let.nnames);
  for (int i = 0; i < st->u.let.nnames; i++)
    tuple->u.list.elems[i] = name_expr(a, st->u.let.names[i].id, st->u.let.names[i].span);
  X->value = tuple;
  return true;
}

/* The parameters of [p] that are the model's (not variables), for its weights. */
static CtxrtWeights *weights(Expr *X, const RaProgram *p) {
  CtxrtParam *ps = ctx_model_params(p);
  int n = 0;
  for (int k = 0; k < p->nparams; k++)
    if (!repl_var(X->R, ps[k].name)) ps[n++] = ps[k];
  CtxrtWeights *w = repl_weights(X->R, ps, n);
  free(ps);
  return w;
}

/* The second pass: the program returning the value, compiled and called. */
static void evaluate(Expr *X) {
  CtxSession *s = &X->b.s;
  CtxArena *a = s->arena;
  if (X->stmt->kind == AST_LET && X->stmt->u.let.nnames == 1 && X->type->kind == SEMA_TUPLE) {
    ctx_diag_error(&s->diag, X->stmt->u.let.names[0].span, "a tuple is bound field by field: "
                   "let (a, b) = ...");
    return;
  }
  AstStmt *body[2];
  int n = 0;
  if (X->stmt->kind == AST_LET) body[n++] = (AstStmt *)X->stmt;
  body[n++] = return_stmt(a, X->value);
  SemaModel *m = check(X, program(X, type_of(a, X->type), body, n));
  RaProgram *p = m ? ra_build(a, &s->diag, m, X->R->opts.disabled | EXPR_DISABLED) : NULL;
  s->opts.schedule = NULL; /* a -s file is the model's, not this program's */
  IlirKernel *k = p && !s->diag.errors ? ctx_pipeline_kernel(s, p) : NULL;
  if (!k || !weights(X, p)) return;
#ifdef CTX_HAVE_JIT
  Signature S;
  memset(&S, 0, sizeof S);
  build_signature(X, p, k, &S);
  CgJitOptions o = repl_jit_options(X->R);
  o.call = &S.call;
  CgJit *jit = cg_jit_compile_with(k, &o, &s->diag);
  if (jit && ffi_invoke(X, cg_jit_call_entry(jit), &S)) {
    cross_check(X, p, &S, result(&S, 0));
    deliver(X, &S);
  }
  cg_jit_free(jit);
  for (int i = S.nin; i < S.call.nargs; i++) free(S.data[i]);
#else
  repl_error(X->R, "ctx was built without LLVM: expressions are JIT-compiled");
#endif
}

void repl_eval(Repl *R, const char *text) {
  Expr X;
  memset(&X, 0, sizeof X);
  X.R = R;
  if (repl_session_open(R, &X.b)) {
    CtxSession *s = &X.b.s;
    char *name = ctx_arena_printf(s->arena, "<repl:%d>", R->input_no);
    int id = ctx_sources_add(&s->srcs, name, text, strlen(text));
    if (!X.b.file->file) X.b.file->file = id; /* no model: imports are relative to here */
    X.stmt = ast_parse_stmt(s->arena, &s->diag, id);
    if (X.stmt && value_of(&X) && find_type(&X)) evaluate(&X);
  }
  repl_session_close(&X.b);
}
