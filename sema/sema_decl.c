/* sema_decl.c — the entry point and the declarations of a model file.
 *
 * sema_check walks the items in four steps: (1) the global names, with
 * duplicates reported; (2) dims in file order, each an integer constant over
 * earlier dims, then -D overrides; (3) the structure input, per-node inputs,
 * params and function signatures; (4) function bodies and the output. Later
 * steps work on whatever earlier ones could resolve, so one mistake is
 * reported once.
 *
 * Imported files (files[1..], resolved by the driver) hold only `def` and
 * `use` items; their defs go to a library scope that the model sees and that
 * is all an imported def sees (SEMA-LIB-SCOPE). A def name is unique across
 * all files. A files[0] made only of defs and uses is a module: its defs are
 * checked as far as they can be without a call, and no model is required.
 */
#include "sema/sema_int.h"

#include <string.h>

/* A place for what a file lacks: the file, no line (`model.ctx: error: ...`). */
static CtxSpan file_span(const AstFile *f) {
  CtxSpan s = {f->file, 0, 0, 0, 0};
  return s;
}

/* Resolves a declared type to a concrete one; dims are evaluated in [scope]. */
SemaType *sema_resolve_type(Sema *S, Scope *scope, const AstType *t);
SemaType *sema_resolve_type(Sema *S, Scope *scope, const AstType *t) {
  if (t->kind == AST_TYPE_TUPLE) {
    SemaType *r = CTX_NEW(S->arena, SemaType);
    r->kind = SEMA_TUPLE;
    r->nfields = t->nfields;
    r->fields = CTX_NEW_ARRAY(S->arena, SemaType *, t->nfields);
    r->names = CTX_NEW_ARRAY(S->arena, const char *, t->nfields);
    for (int i = 0; i < t->nfields; i++) {
      r->fields[i] = sema_resolve_type(S, scope, t->fields[i].type);
      r->names[i] = t->fields[i].name;
      if (r->fields[i]->kind == SEMA_ERROR) return r->fields[i];
    }
    return r;
  }
  if (t->kind != AST_TYPE_F32 && t->kind != AST_TYPE_I32) {
    ctx_diag_error(S->diag, t->span, "a structure type may only be the type of an input");
    return sema_error_type(S);
  }
  if (t->ndims > SEMA_MAX_RANK) {
    ctx_diag_error(S->diag, t->span, "a tensor may have at most %d axes", SEMA_MAX_RANK);
    return sema_error_type(S);
  }
  long dims[SEMA_MAX_RANK] = {0}, count = 1;
  bool huge = false;
  for (int i = 0; i < t->ndims; i++) {
    if (!sema_const_eval(S, scope, t->dims[i], &dims[i])) return sema_error_type(S);
    if (dims[i] <= 0) {
      ctx_diag_error(S->diag, t->dims[i]->span, "a dimension must be positive, found %ld",
                     dims[i]);
      return sema_error_type(S);
    }
    huge |= __builtin_mul_overflow(count, dims[i], &count) || count > SEMA_MAX_ELEMS;
  }
  SemaType *r = sema_tensor_type(S, t->kind == AST_TYPE_F32 ? SEMA_F32 : SEMA_I32, t->ndims,
                                 dims);
  if (huge) {
    ctx_diag_error(S->diag, t->span, "%s has more than %ld elements, the most a tensor may "
                   "hold", sema_type_str(S, r), SEMA_MAX_ELEMS);
    return sema_error_type(S);
  }
  return r;
}

/* Step 1: global names; the model declaration; `use`. */
static void declare_globals(Sema *S, AstFile *f) {
  static const SymKind kinds[] = {
      [AST_MODEL] = SYM_MODEL, [AST_DIM] = SYM_DIM, [AST_INPUT] = SYM_INPUT,
      [AST_PARAM] = SYM_PARAM, [AST_REC] = SYM_REC, [AST_DEF] = SYM_DEF};
  const AstItem *model = NULL;
  for (int i = 0; i < f->nitems; i++) {
    const AstItem *it = f->items[i];
    if (it->kind == AST_USE || it->kind == AST_OUTPUT || it->kind == AST_SCHEDULE ||
        !it->name.id)
      continue; /* `use` was resolved by the driver */
    Sym *lib = sema_find(&S->lib, it->name.id);
    if (lib) {
      ctx_diag_error(S->diag, it->name.span, "duplicate definition of '%s'", it->name.id);
      ctx_diag_note(S->diag, lib->span, "'%s' first defined here, in an imported file",
                    it->name.id);
      continue;
    }
    if (it->kind == AST_MODEL) {
      if (model) {
        ctx_diag_error(S->diag, it->span, "a file may declare only one model");
        ctx_diag_note(S->diag, model->span, "the model is declared here");
        continue;
      }
      model = it;
      S->m->name = it->name.id;
    }
    Sym *s = sema_bind(S, &S->globals, it->name.id, it->name.span, kinds[it->kind]);
    if (s) s->item = it;
  }
  if (!model) ctx_diag_error(S->diag, file_span(f), "missing 'model' declaration");
}

static const char *const item_words[] = {
    [AST_MODEL] = "model", [AST_DIM] = "dim", [AST_INPUT] = "input",
    [AST_PARAM] = "param", [AST_USE] = "use", [AST_REC] = "rec",
    [AST_DEF] = "def", [AST_OUTPUT] = "output", [AST_SCHEDULE] = "schedule"};

static bool is_module(const AstFile *f) {
  for (int i = 0; i < f->nitems; i++)
    if (f->items[i]->kind != AST_DEF && f->items[i]->kind != AST_USE) return false;
  return true;
}

/* Step 1 for a module: its defs go to the library scope; nothing else may
 * appear in it. */
static void declare_module(Sema *S, const AstFile *f, bool imported) {
  for (int i = 0; i < f->nitems; i++) {
    const AstItem *it = f->items[i];
    if (it->kind == AST_USE) continue;
    if (it->kind != AST_DEF) {
      ctx_diag_error(S->diag, it->span, "'%s' may not appear in an imported file; a module "
                     "holds only 'def' and 'use' items", item_words[it->kind]);
      continue;
    }
    if (!it->name.id) continue;
    Sym *s = sema_bind(S, &S->lib, it->name.id, it->name.span, SYM_DEF);
    if (!s) continue;
    s->item = it;
    s->imported = imported;
  }
}

/* Step 2: dims in order; a dim sees only the dims before it. */
static void eval_dims(Sema *S, AstFile *f, const SemaDefine *defs, int ndefs) {
  S->m->dims = CTX_NEW_ARRAY(S->arena, SemaDim, f->nitems);
  for (int i = 0; i < f->nitems; i++) {
    const AstItem *it = f->items[i];
    if (it->kind != AST_DIM) continue;
    Sym *s = sema_lookup(S, &S->globals, it->name.id);
    long v;
    bool ok = sema_const_eval(S, &S->globals, it->value, &v);
    for (int d = 0; d < ndefs; d++)
      if (strcmp(defs[d].name, it->name.id) == 0) {
        v = defs[d].value;
        ok = true;
      }
    if (ok && v <= 0) {
      ctx_diag_error(S->diag, it->value->span, "dim '%s' must be positive, found %ld",
                     it->name.id, v);
      ok = false;
    }
    if (s && s->item == it) s->checked = true;
    if (!ok || !s || s->item != it) continue;
    s->type = sema_int_type(S, true, v);
    SemaDim *d = &S->m->dims[S->m->ndims++];
    d->name = it->name.id;
    d->value = v;
    d->span = it->name.span;
  }
  for (int d = 0; d < ndefs; d++) {
    Sym *s = sema_lookup(S, &S->globals, defs[d].name);
    if (!s || s->kind != SYM_DIM)
      ctx_diag_error(S->diag, file_span(f), "-D %s: the model has no dim '%s'", defs[d].name,
                     defs[d].name);
  }
}

/* The structure input: tree(max_children = K), dag(max_preds = P), sequence. */
static void declare_structure(Sema *S, const AstItem *it, const AstItem **first) {
  if (*first) {
    ctx_diag_error(S->diag, it->span, "a model has exactly one structure input");
    ctx_diag_note(S->diag, (*first)->span, "the structure input is declared here");
    return;
  }
  *first = it;
  const AstType *t = it->type;
  SemaStructure *st = &S->m->structure;
  st->name = it->name.id;
  st->span = it->name.span;
  st->kind = t->kind == AST_TYPE_TREE ? SEMA_TREE : t->kind == AST_TYPE_DAG ? SEMA_DAG
                                                                           : SEMA_SEQUENCE;
  st->max_arity = 1;
  S->has_structure = true;
  if (st->kind == SEMA_SEQUENCE) return;
  const char *want = st->kind == SEMA_TREE ? "max_children" : "max_preds";
  if (t->arg && strcmp(t->arg, want) != 0) {
    ctx_diag_error(S->diag, t->arg_span, "'%s' is not an argument of '%s'; expected '%s'",
                   t->arg, sema_struct_word(st->kind), want);
    return;
  }
  long v;
  if (!t->arity || !sema_const_eval(S, &S->globals, t->arity, &v)) return;
  if (v <= 0) {
    ctx_diag_error(S->diag, t->arity->span, "'%s' must be positive, found %ld", want, v);
    return;
  }
  st->max_arity = v;
}

/* A per-node input `x : f32[t, D]`: its first axis is the structure. */
static void declare_input(Sema *S, const AstItem *it, Sym *s) {
  const AstType *t = it->type;
  const char *st = S->m->structure.name;
  if (!S->has_structure) return; /* reported as a missing structure */
  if (t->kind == AST_TYPE_TUPLE || t->ndims == 0 || t->dims[0]->kind != AST_NAME ||
      strcmp(t->dims[0]->u.name.id, st) != 0) {
    ctx_diag_error(S->diag, t->span, "input '%s' must be per-node: its first axis must be "
                   "the structure '%s'", it->name.id, st);
    return;
  }
  AstType row = *t;
  row.dims = t->dims + 1;
  row.ndims = t->ndims - 1;
  SemaType *rt = sema_resolve_type(S, &S->globals, &row);
  if (rt->kind == SEMA_ERROR) return;
  SemaInput *in = &S->m->inputs[S->m->ninputs];
  in->name = it->name.id;
  in->row = rt;
  in->span = it->name.span;
  s->index = S->m->ninputs++;
  s->type = rt;
}

static void declare_param(Sema *S, const AstItem *it, Sym *s) {
  SemaType *t = sema_resolve_type(S, &S->globals, it->type);
  if (t->kind == SEMA_ERROR) return;
  if (t->kind != SEMA_TENSOR || t->elem != SEMA_F32) {
    ctx_diag_error(S->diag, it->type->span, "a param must be an f32 tensor");
    return;
  }
  SemaParam *p = &S->m->params[S->m->nparams];
  p->name = it->name.id;
  p->type = t;
  p->span = it->name.span;
  s->index = S->m->nparams++;
  s->type = t;
}

/* A name in a def parameter's shape that is no dim is a shape variable,
 * bound at each call. */
static bool names_non_dim(Sema *S, const AstExpr *e) {
  if (e->kind == AST_BINARY)
    return names_non_dim(S, e->u.binary.lhs) || names_non_dim(S, e->u.binary.rhs);
  if (e->kind == AST_UNARY) return names_non_dim(S, e->u.unary.operand);
  if (e->kind != AST_NAME) return false;
  Sym *s = sema_lookup(S, S->top, e->u.name.id);
  return !s || s->kind != SYM_DIM;
}

static bool has_shape_vars(Sema *S, const AstItem *it) {
  for (int i = 0; i < it->nparams; i++) {
    const AstType *t = it->params[i].type;
    for (int j = 0; t->kind <= AST_TYPE_I32 && j < t->ndims; j++)
      if (names_non_dim(S, t->dims[j])) return true;
  }
  return false;
}

static void declare_function(Sema *S, const AstItem *it, Sym *s) {
  SemaFunc *fn = &S->m->funcs[S->m->nfuncs];
  fn->item = it;
  fn->is_rec = it->kind == AST_REC;
  fn->imported = s->imported;
  s->index = S->m->nfuncs++;
  if (fn->is_rec) {
    const char *st = S->m->structure.name;
    if (S->has_structure && it->domain.id && strcmp(it->domain.id, st) != 0)
      ctx_diag_error(S->diag, it->domain.span, "'%s' is not the structure input; a rec "
                     "function ranges over the nodes of '%s'", it->domain.id, st);
  } else if (has_shape_vars(S, it)) {
    return; /* typed at each call */
  }
  fn->result = sema_resolve_type(S, S->top, it->type);
  s->type = fn->result;
}

/* Checks a def that has no shape variables, or a rec function. */
static void check_function(Sema *S, const AstItem *it, Sym *s) {
  const SemaFunc *fn = &S->m->funcs[s->index];
  if (!fn->result || fn->result->kind == SEMA_ERROR) return;
  Scope params = {NULL, NULL};
  if (fn->is_rec) {
    if (!S->has_structure) return;
    Sym *n = sema_bind(S, &params, it->params[0].name, it->params[0].name_span, SYM_NODE);
    n->type = sema_node_type(S, SEMA_NODE_SELF);
  } else {
    for (int i = 0; i < it->nparams; i++) {
      Sym *p = sema_bind(S, &params, it->params[i].name, it->params[i].name_span, SYM_LOCAL);
      if (p) p->type = sema_resolve_type(S, S->top, it->params[i].type);
    }
    s->checked = true;
  }
  sema_function_body(S, &params, it, fn->result);
}

/* output REC(root(t)) or output REC(root(t)).field */
static void check_output(Sema *S, const AstItem *it, const AstItem **first) {
  if (*first) {
    ctx_diag_error(S->diag, it->span, "a model has exactly one output");
    ctx_diag_note(S->diag, (*first)->span, "the output is declared here");
    return;
  }
  *first = it;
  const AstExpr *e = it->value, *call = e;
  if (call->kind == AST_MEMBER) call = call->u.member.base;
  Sym *f = call->kind == AST_CALL ? sema_lookup(S, &S->globals, call->u.call.callee) : NULL;
  if (!f || f->kind != SYM_REC) {
    ctx_diag_error(S->diag, e->span, "the output must be a call of a rec function on "
                   "'root(%s)'", S->m->structure.name ? S->m->structure.name : "t");
    return;
  }
  S->in_output = true;
  SemaType *t = sema_expr(S, &S->globals, e);
  S->in_output = false;
  S->m->output = e;
  S->m->output_func = &S->m->funcs[f->index];
  S->m->output_type = t;
}

static void declare_items(Sema *S, AstFile *f) {
  const AstItem *st = NULL;
  for (int i = 0; i < f->nitems; i++) {
    const AstItem *it = f->items[i];
    if (it->kind == AST_INPUT && it->type->kind >= AST_TYPE_TREE &&
        it->type->kind <= AST_TYPE_SEQUENCE)
      declare_structure(S, it, &st);
  }
  if (!st)
    ctx_diag_error(S->diag, file_span(f), "missing structure input (a tree, dag or sequence)");
  for (int i = 0; i < f->nitems; i++) {
    const AstItem *it = f->items[i];
    Sym *s = it->name.id ? sema_lookup(S, &S->globals, it->name.id) : NULL;
    if (!s || s->item != it) continue;
    if (it->kind == AST_INPUT && it != st && it->type->kind != AST_TYPE_TREE &&
        it->type->kind != AST_TYPE_DAG && it->type->kind != AST_TYPE_SEQUENCE)
      declare_input(S, it, s);
    if (it == st) s->kind = SYM_STRUCT;
    if (it->kind == AST_PARAM) declare_param(S, it, s);
    if (it->kind == AST_REC || it->kind == AST_DEF) declare_function(S, it, s);
  }
}

/* Steps 3 and 4 for the library's defs, inside the library scope. [first] is
 * the first module file (1, or 0 when files[0] is a module itself). */
static void check_library(Sema *S, AstFile **files, int first, int nfiles) {
  S->top = &S->lib;
  for (int pass = 0; pass < 2; pass++)
    for (int k = first; k < nfiles && !ctx_diag_should_stop(S->diag); k++)
      for (int i = 0; i < files[k]->nitems; i++) {
        const AstItem *it = files[k]->items[i];
        Sym *s = it->kind == AST_DEF && it->name.id ? sema_find(&S->lib, it->name.id) : NULL;
        if (!s || s->item != it) continue;
        if (pass == 0) declare_function(S, it, s);
        else check_function(S, it, s);
      }
  S->top = &S->globals;
}

SemaModel *sema_check(CtxArena *arena, CtxDiag *diag, AstFile **files, int nfiles,
                      const SemaDefine *defines, int ndefines) {
  if (nfiles < 1 || files[0]->nitems == 0) return NULL;
  AstFile *f = files[0];
  Sema S = {0};
  S.arena = arena;
  S.diag = diag;
  S.top = &S.globals;
  S.globals.up = &S.lib;
  int nitems = 0;
  for (int k = 0; k < nfiles; k++) nitems += files[k]->nitems;
  S.m = CTX_NEW(arena, SemaModel);
  S.m->types = sema_table_new(arena);
  S.m->inputs = CTX_NEW_ARRAY(arena, SemaInput, nitems);
  S.m->params = CTX_NEW_ARRAY(arena, SemaParam, nitems);
  S.m->funcs = CTX_NEW_ARRAY(arena, SemaFunc, nitems);
  bool module = is_module(f);
  for (int k = module ? 0 : 1; k < nfiles; k++) declare_module(&S, files[k], k > 0);
  if (module) {
    check_library(&S, files, 0, nfiles);
    return S.m;
  }
  declare_globals(&S, f);
  eval_dims(&S, f, defines, ndefines);
  check_library(&S, files, 1, nfiles);
  declare_items(&S, f);
  const AstItem *out = NULL;
  for (int i = 0; i < f->nitems && !ctx_diag_should_stop(diag); i++) {
    const AstItem *it = f->items[i];
    Sym *s = it->name.id ? sema_lookup(&S, &S.globals, it->name.id) : NULL;
    if ((it->kind == AST_REC || it->kind == AST_DEF) && s && s->item == it)
      check_function(&S, it, s);
    if (it->kind == AST_OUTPUT && S.has_structure) check_output(&S, it, &out);
    else if (it->kind == AST_OUTPUT) out = it;
  }
  if (!out) ctx_diag_error(diag, file_span(f), "missing 'output' declaration");
  return S.m;
}
