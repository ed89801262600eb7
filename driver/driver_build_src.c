/* driver_build_src.c — the sources `ctx build` writes next to the kernel's
 * object (driver_build.c runs the tools): NAME.h, the library's documented C
 * API, and NAME_model.c, the model's descriptor (ctx_model_desc_init's
 * tables as C arrays) and the API as thin wrappers over ctxrt_model_*.
 */
#include "driver/driver_build.h"

#include <string.h>

/* ---- the header --------------------------------------------------------- */

/* "[256]", "[4, 8]", "[]" */
static void print_shape(CtxBuf *out, int ndim, const long *dims) {
  ctx_buf_putc(out, '[');
  for (int d = 0; d < ndim; d++) ctx_buf_printf(out, "%s%ld", d ? ", " : "", dims[d]);
  ctx_buf_putc(out, ']');
}

/* The header's comment: what the model reads and returns, its parameters. */
static void header_comment(CtxBuf *h, const CtxBuild *b) {
  const RaProgram *p = b->p;
  const char *n = b->name;
  ctx_buf_printf(h, "/* %s.h — the model '%s', compiled ahead of time by `ctx build`.\n"
                 " * Generated from %s; do not edit.\n *\n", n, n, b->s->opts.files[0]);
  const char *cpu = b->s->opts.build.cpu;
  ctx_buf_printf(h, " * Link with lib%s.so, or with lib%s.a -ljansson -lm -lpthread (both hold\n"
                 " * the kernel and libctxrt). The kernel was compiled for %s%s\n"
                 " * (ctx build --cpu).\n"
                 " * Several libraries (ctx build --name) link into one program. A run\n"
                 " * splits each level of nodes over a team of threads, the calling one\n"
                 " * included: one per online core, or the environment variable\n"
                 " * CTXRT_THREADS when set, or %s_set_threads. Results do not depend on\n"
                 " * the count. Use one model from one thread at a time.\n *\n",
                 n, n, cpu && strcmp(cpu, "native") ? "any CPU of level " : "the CPU that built it",
                 cpu && strcmp(cpu, "native") ? cpu : "", n);
  ctx_buf_printf(h, " * Input: %ss, at most %ld dependencies a node (0: no limit), %ld value%s\n"
                 " * per node (%s). Bracketed trees carry one word id at each leaf.\n"
                 " * Structures come as text (bracketed trees, node lists: ctx's\n"
                 " * docs/formats.md) or as arrays (%s_run_arrays).\n",
                 ctxrt_kind_name(b->desc.desc.spec.kind), p->max_arity, p->values_per_node,
                 p->values_per_node == 1 ? "" : "s",
                 b->desc.desc.spec.values_on == CTXRT_VALUES_ALL ? "every node" : "leaves", n);
  for (int i = 0; i < p->ninputs; i++)
    if (p->inputs[i].is_int && p->inputs[i].bound > 0)
      ctx_buf_printf(h, " * Input '%s': word ids in [0, %ld).\n", p->inputs[i].name,
                     p->inputs[i].bound);
  ctx_buf_puts(h, " * Output: one row per structure (its root / sink / last element) of\n"
                  " * shape ");
  print_shape(h, p->out_shape.rank, p->out_shape.dims);
  ctx_buf_printf(h, ", %s_output_size() floats.\n *\n"
                 " * Weights: a safetensors file (F32; F64, F16, BF16 converted) with\n * exactly these tensors:\n", n);
  for (int i = 0; i < p->nparams; i++) {
    ctx_buf_printf(h, " *   %s ", p->params[i].name);
    print_shape(h, p->params[i].shape.rank, p->params[i].shape.dims);
    ctx_buf_putc(h, '\n');
  }
  ctx_buf_printf(h, " * or, without a file, `ctx run`'s seeded defaults.\n *\n"
                 " * Every int function returns %s_OK (0) or an error code below, and\n"
                 " * writes the message (`FILE:LINE: error: ...`) to err[0 .. errlen)\n"
                 " * (NUL-terminated, truncated; err may be NULL).\n */\n", b->upper);
}

/* NAME_run_arrays (and NAME_run_heads for tree models) and what a caller
 * needs to lay its arrays out. */
static void header_arrays(CtxBuf *h, const CtxBuild *b) {
  const char *n = b->name;
  const CtxrtSpec *spec = &b->desc.desc.spec;
  ctx_buf_printf(h, "/* Runs the model on [num_structs] structures held as arrays (no text).\n"
                 " * Structure s has num_nodes[s] nodes; per-node arrays hold the nodes of\n"
                 " * all structures one after the other, and node indices count from 0\n"
                 " * within their structure. Node n depends on num_deps[n] nodes, listed in\n"
                 " * order in [deps] (all nodes' lists concatenated): %s.\n"
                 " * [values] holds %s_num_values() doubles per node (word ids as\n"
                 " * integral values%s).\n * Checked as text is (a dependency outside its\n"
                 " * structure, cycles, roots, arity, word ids): messages name the\n"
                 " * structure (from 1) and the node (its index). The arrays are not kept. */\n"
                 "int %s_run_arrays(%s_model *m, int32_t num_structs, const int32_t *num_nodes,\n"
                 "    const int32_t *num_deps, const int32_t *deps, const double *values,\n"
                 "    char *err, size_t errlen);\n\n",
                 spec->kind == CTXRT_TREE  ? "a node's children"
                 : spec->kind == CTXRT_DAG ? "a node's predecessors"
                                           : "none for sequences (both may be NULL: each "
                                             "element\n * depends on the one before it)",
                 n, spec->values_on == CTXRT_VALUES_LEAVES
                        ? "; internal nodes' are ignored" : "",
                 n, n);
  if (spec->kind == CTXRT_TREE)
    ctx_buf_printf(h, "/* The same with each tree as a parent array: heads[n] is node n's\n"
                   " * parent (an index within its structure) or -1 for the root (CoNLL-U's\n"
                   " * HEAD minus one); a node's children come in index order. */\n"
                   "int %s_run_heads(%s_model *m, int32_t num_structs, const int32_t *num_nodes,\n"
                   "    const int32_t *heads, const double *values, char *err, size_t errlen);\n\n",
                   n, n);
  ctx_buf_printf(h, "/* Values per node of the arrays above; the kind of structure the model\n"
                 " * reads (1 tree, 2 DAG, 3 sequence); the shape of one output row into\n"
                 " * dims[0 .. rank) (room for 8), returning its rank. */\n"
                 "int %s_num_values(void);\nint %s_kind(void);\n"
                 "int %s_output_shape(int64_t *dims);\n\n", n, n, n);
}

static void header_api(CtxBuf *h, const CtxBuild *b) {
  const char *n = b->name, *u = b->upper;
  ctx_buf_printf(h, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
                 "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", u, u);
  ctx_buf_printf(h, "enum {\n  %s_OK = 0,\n  %s_ERR_IO = 1,      /* a file could not be read */\n"
                 "  %s_ERR_SYNTAX = 2,  /* malformed input text or weights file */\n"
                 "  %s_ERR_INVALID = 3, /* input or weights that do not fit the model */\n"
                 "  %s_ERR_ARG = 4,     /* a bad argument */\n"
                 "  %s_ERR_NOMEM = 5    /* out of memory */\n};\n\n", u, u, u, u, u, u);
  ctx_buf_printf(h, "typedef struct %s_model %s_model;\n\n", n, n);
  ctx_buf_printf(h, "/* A model with the weights of the safetensors file [weights_path], or the\n"
                 " * seeded defaults (seed 0) when it is NULL, in [*out] (NULL on failure).\n"
                 " * F64, F16 and BF16 tensors are converted to float32; on success err\n"
                 " * holds the note that says so (`W.safetensors: note: 2 tensors\n"
                 " * converted to float32 from F64`), or \"\" when none was converted. */\n"
                 "int %s_create(const char *weights_path, %s_model **out, char *err,\n"
                 "              size_t errlen);\n\n", n, n);
  ctx_buf_printf(h, "/* The same with the default weights of [seed] (ctx run --seed). */\n"
                 "int %s_create_seeded(uint64_t seed, %s_model **out, char *err, size_t errlen);\n\n",
                 n, n);
  ctx_buf_printf(h, "/* Runs the model on the [len] bytes of bracketed trees (one a line, leaf\n"
                 " * tokens integer word ids, or words of %s_set_vocab's vocabulary) at\n"
                 " * [text]; the outputs replace the last run's. */\n"
                 "int %s_run_ptb(%s_model *m, const char *text, size_t len, char *err,\n"
                 "               size_t errlen);\n\n", n, n, n);
  ctx_buf_printf(h, "/* The same for node lists (docs/formats.md). */\n"
                 "int %s_run_nodes(%s_model *m, const char *text, size_t len, char *err,\n"
                 "                 size_t errlen);\n\n", n, n);
  ctx_buf_printf(h, "/* The same for CoNLL-U dependency trees (one per sentence, a node per\n"
                 " * word, children in sentence order): the word of each node is its [column]\n"
                 " * (\"FORM\", \"LEMMA\", \"UPOS\" or \"XPOS\"; NULL: FORM), looked up in the\n"
                 " * vocabulary of %s_set_vocab, or an integer word id without one. */\n"
                 "int %s_run_conllu(%s_model *m, const char *text, size_t len, const char *column,\n"
                 "                  char *err, size_t errlen);\n\n"
                 "/* The vocabulary of the text runs from now on (ctx run --vocab, --unk): the\n"
                 " * [len] bytes at [words], one word a line (id: its line from 0), words not\n"
                 " * in it taking [unk]'s id when [unk] is not NULL; [words] NULL: none (words\n"
                 " * are integer ids). On failure the model keeps its vocabulary. */\n"
                 "int %s_set_vocab(%s_model *m, const char *words, size_t len, const char *unk,\n"
                 "                 char *err, size_t errlen);\n\n"
                 "/* Whether the runs from now on give a row for every node, in the input's\n"
                 " * order (ctx run --all-nodes), not one per structure. */\n"
                 "void %s_set_all_nodes(%s_model *m, int all_nodes);\n\n", n, n, n, n, n, n, n);
  header_arrays(h, b);
  ctx_buf_printf(h, "/* The number of output rows of the last successful run (0 before). */\n"
                 "int64_t %s_num_outputs(const %s_model *m);\n\n"
                 "/* Row [i] of the last run's outputs, %s_output_size() floats, valid until\n"
                 " * the next run or destroy; NULL when [i] is out of range. */\n"
                 "const float *%s_output(const %s_model *m, int64_t i);\n\n"
                 "/* Floats per output row. */\nint64_t %s_output_size(void);\n\n"
                 "/* Frees [m]; NULL is allowed. */\nvoid %s_destroy(%s_model *m);\n\n",
                 n, n, n, n, n, n, n, n);
  ctx_output_header_api(h, b->p, n);
  ctx_buf_printf(h, "/* Runs [m] on [threads] threads from its next run on; 0: the default\n"
                 " * (CTXRT_THREADS, else one per online core). %s_ERR_ARG when negative. */\n"
                 "int %s_set_threads(%s_model *m, int threads, char *err, size_t errlen);\n\n",
                 u, n, n);
  ctx_buf_printf(h, "/* For programs that drive the runtime library themselves (ctx's\n"
                 " * runtime/ctxrt.h, linked into this library): the model's descriptor, a\n"
                 " * `const CtxrtModelDesc *`, for ctxrt_model_load and ctxrt_model_run on\n"
                 " * forests already read. */\n"
                 "const void *%s_descriptor(void);\n\n", n);
  ctx_buf_printf(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s_H */\n", u);
}

/* ---- the descriptor and the API (NAME_model.c) ----------------------------- */

/* The static tables of the descriptor: buffers, parameters, word bounds. */
static void model_tables(CtxBuf *c, const CtxBuild *b) {
  const CtxrtModelDesc *d = &b->desc.desc;
  const char *n = b->name;
  ctx_buf_printf(c, "static const CtxrtModelBuf %s_bufs[] = {\n", n);
  for (int32_t i = 0; i < d->num_bufs; i++)
    ctx_buf_printf(c, "  {%d, %lld, %d, %lld, %lld, %lld, %lld, %lld}, /* %s */\n",
                   (int)d->bufs[i].kind, (long long)d->bufs[i].size, (int)d->bufs[i].param,
                   (long long)d->bufs[i].off, (long long)d->bufs[i].stride,
                   (long long)d->bufs[i].rows, (long long)d->bufs[i].cols,
                   (long long)d->bufs[i].panel, b->k->bufs[i].name);
  ctx_buf_printf(c, "  {0, 0, -1, 0, 0, 0, 0, 0}\n};\n\nstatic const CtxrtParam %s_params[] = {\n", n);
  for (int32_t i = 0; i < d->num_params; i++) {
    ctx_buf_printf(c, "  {\"%s\", %d, {", d->params[i].name, (int)d->params[i].ndim);
    for (int32_t k = 0; k < d->params[i].ndim; k++)
      ctx_buf_printf(c, "%s%lld", k ? ", " : "", (long long)d->params[i].shape[k]);
    ctx_buf_puts(c, "}},\n");
  }
  ctx_buf_printf(c, "  {\"\", 0, {0}}\n};\n\nstatic const int64_t %s_word_bound[] = {", n);
  for (int32_t i = 0; i < d->spec.num_values; i++)
    ctx_buf_printf(c, "%lld, ", (long long)d->spec.word_bound[i]);
  ctx_buf_puts(c, "0};\n\n");
}

static void model_desc(CtxBuf *c, const CtxBuild *b) {
  const CtxrtModelDesc *d = &b->desc.desc;
  const char *n = b->name;
  if (d->ptx)
    ctx_buf_printf(c, "extern const char %s_ptx[]; /* NAME_kernel.o: the PTX */\n\n", n);
  else
    ctx_buf_printf(c, "void %s(void *const *bufs, int64_t num_nodes, int64_t num_levels,\n"
                   "    int64_t tid, int64_t nthreads, void (*barrier)(void *), void *barrier_ctx);\n\n",
                   b->k->name);
  model_tables(c, b);
  ctx_buf_printf(c, "static const CtxrtModelDesc %s_desc = {\n  \"%s\", %s,\n", n, n,
                 d->ptx ? "NULL" : b->k->name);
  ctx_buf_printf(c, "  %d, %s_bufs,\n  %d, %s_params,\n", (int)d->num_bufs, n,
                 (int)d->num_params, n);
  ctx_buf_printf(c, "  {(CtxrtKind)%d, %d, %d, %d, (CtxrtValuesOn)%d, %s_word_bound},\n",
                 (int)d->spec.kind, (int)d->spec.max_arity, (int)d->spec.min_arity,
                 (int)d->spec.num_values, (int)d->spec.values_on, n);
  ctx_buf_printf(c, "  %d, %d, %lld, %lld,\n", (int)d->max_deps, (int)d->out_buf,
                 (long long)d->out_off, (long long)d->out_size);
  if (d->ptx)
    ctx_buf_printf(c, "  %s_ptx, \"%s\", %d, %lld,\n", n, d->ptx_entry,
                   (int)d->gpu_block_threads, (long long)d->gpu_shared_bytes);
  else
    ctx_buf_puts(c, "  NULL, NULL, 0, 0,\n");
  ctx_buf_printf(c, "  %d /* unread_values */, %d /* gpu_all_blocks */, "
                 "%d /* gpu_nodes_per_block */, %d /* balance_threads */\n};\n\n",
                 (int)d->unread_values, (int)d->gpu_all_blocks, (int)d->gpu_nodes_per_block,
                 (int)d->balance_threads);
}

/* NAME_run_arrays, NAME_run_heads and the layout accessors. */
static void model_arrays(CtxBuf *c, const CtxBuild *b) {
  const char *n = b->name;
  const RaShape *sh = &b->p->out_shape;
  for (int heads = 0; heads < 1 + (b->desc.desc.spec.kind == CTXRT_TREE); heads++)
    ctx_buf_printf(c, "int %s_run_%s(%s_model *m, int32_t num_structs, const int32_t *num_nodes,\n"
                   "    %s, const double *values, char *err, size_t errlen) {\n"
                   "  CtxrtError e;\n"
                   "  if (!m) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){CTXRT_ERR_ARG, 0, "
                   "\"error: no model\"}, err, errlen);\n"
                   "  CtxrtStatus st = ctxrt_model_run_arrays((CtxrtModel *)m, num_structs, "
                   "num_nodes, %s, values, &e);\n"
                   "  return %s_status(st, &e, err, errlen);\n}\n\n",
                   n, heads ? "heads" : "arrays", n,
                   heads ? "const int32_t *heads" : "const int32_t *num_deps, const int32_t *deps",
                   n, heads ? "NULL, NULL, heads" : "num_deps, deps, NULL", n);
  ctx_buf_printf(c, "int %s_num_values(void) { return %s_desc.spec.num_values; }\n\n"
                 "int %s_kind(void) { return (int)%s_desc.spec.kind; }\n\n"
                 "int %s_output_shape(int64_t *dims) {\n", n, n, n, n, n);
  for (int d = 0; d < sh->rank; d++)
    ctx_buf_printf(c, "  dims[%d] = %ld;\n", d, sh->dims[d]);
  ctx_buf_printf(c, "  (void)dims;\n  return %d;\n}\n\n", sh->rank);
}

/* The API of NAME.h over ctxrt_model_*; a NAME_model is a CtxrtModel. */
static void model_api(CtxBuf *c, const CtxBuild *b) {
  const char *n = b->name;
  ctx_buf_printf(c, "static int %s_status(CtxrtStatus st, const CtxrtError *e, char *err,\n"
                 "                      size_t errlen) {\n"
                 "  if (err && errlen) snprintf(err, errlen, \"%%s\", st ? e->msg : \"\");\n"
                 "  return (int)st;\n}\n\n", n);
  ctx_buf_printf(c, "static int %s_load(const char *path, uint64_t seed, %s_model **out,\n"
                 "                    char *err, size_t errlen) {\n"
                 "  CtxrtError e;\n  CtxrtModel *m = NULL;\n"
                 "  if (!out) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){CTXRT_ERR_ARG, 0,"
                 " \"error: out is NULL\"}, err, errlen);\n"
                 "  CtxrtStatus st = ctxrt_model_load(&%s_desc, path, seed, &m, &e);\n"
                 "  *out = (%s_model *)m;\n"
                 "  /* on success e.msg is \"\" or the note of converted tensors */\n"
                 "  if (!st && err && errlen) snprintf(err, errlen, \"%%s\", e.msg);\n"
                 "  return st ? %s_status(st, &e, err, errlen) : %s_OK;\n}\n\n",
                 n, n, n, n, n, n, b->upper);
  ctx_buf_printf(c, "int %s_create(const char *weights_path, %s_model **out, char *err,\n"
                 "              size_t errlen) {\n"
                 "  return %s_load(weights_path, 0, out, err, errlen);\n}\n\n"
                 "int %s_create_seeded(uint64_t seed, %s_model **out, char *err, size_t errlen) {\n"
                 "  return %s_load(NULL, seed, out, err, errlen);\n}\n\n", n, n, n, n, n, n);
  for (int nodes = 0; nodes < 2; nodes++)
    ctx_buf_printf(c, "int %s_run_%s(%s_model *m, const char *text, size_t len, char *err,\n"
                   "                size_t errlen) {\n  CtxrtError e;\n"
                   "  if (!m || (!text && len)) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){"
                   "CTXRT_ERR_ARG, 0, \"error: no model or no text\"}, err, errlen);\n"
                   "  CtxrtStatus st = ctxrt_model_run_text((CtxrtModel *)m, \"%s\", text ? text : \"\","
                   " len, %d, &e);\n  return %s_status(st, &e, err, errlen);\n}\n\n",
                   n, nodes ? "nodes" : "ptb", n, n, nodes ? "nodes" : "ptb", nodes, n);
  ctx_buf_printf(c, "int %s_run_conllu(%s_model *m, const char *text, size_t len, const char *column,\n"
                 "                  char *err, size_t errlen) {\n  CtxrtError e;\n"
                 "  int col = ctxrt_conllu_column(column ? column : \"FORM\");\n"
                 "  if (!m || (!text && len) || col < 0) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){"
                 "CTXRT_ERR_ARG, 0, \"error: no model, no text or a column not FORM, LEMMA, UPOS or"
                 " XPOS\"}, err, errlen);\n"
                 "  CtxrtStatus st = ctxrt_model_run_conllu((CtxrtModel *)m, \"conllu\", text ? text :"
                 " \"\", len, col, &e);\n  return %s_status(st, &e, err, errlen);\n}\n\n"
                 "int %s_set_vocab(%s_model *m, const char *words, size_t len, const char *unk,\n"
                 "                 char *err, size_t errlen) {\n  CtxrtError e;\n"
                 "  if (!m) return %s_status(CTXRT_ERR_ARG, &(CtxrtError){CTXRT_ERR_ARG, 0, "
                 "\"error: no model\"}, err, errlen);\n"
                 "  CtxrtStatus st = ctxrt_model_set_vocab((CtxrtModel *)m, \"vocab\", words, len, unk,"
                 " &e);\n  return %s_status(st, &e, err, errlen);\n}\n\n"
                 "void %s_set_all_nodes(%s_model *m, int all_nodes) {\n"
                 "  if (m) ctxrt_model_set_all_nodes((CtxrtModel *)m, all_nodes);\n}\n\n",
                 n, n, n, n, n, n, n, n, n, n);
  model_arrays(c, b);
  ctx_buf_printf(c, "int64_t %s_num_outputs(const %s_model *m) {\n  int64_t rows = 0;\n"
                 "  if (m) ctxrt_model_outputs((const CtxrtModel *)m, &rows);\n"
                 "  return rows;\n}\n\n", n, n);
  ctx_buf_printf(c, "const float *%s_output(const %s_model *m, int64_t i) {\n  int64_t rows = 0;\n"
                 "  const float *out = m ? ctxrt_model_outputs((const CtxrtModel *)m, &rows) : NULL;\n"
                 "  return i >= 0 && i < rows ? out + i * %s_desc.out_size : NULL;\n}\n\n",
                 n, n, n);
  ctx_buf_printf(c, "int %s_set_threads(%s_model *m, int threads, char *err, size_t errlen) {\n"
                 "  CtxrtError e;\n"
                 "  CtxrtStatus st = ctxrt_model_set_threads((CtxrtModel *)m, threads, &e);\n"
                 "  return %s_status(st, &e, err, errlen);\n}\n\n", n, n, n);
  ctx_buf_printf(c, "int64_t %s_output_size(void) { return %s_desc.out_size; }\n\n"
                 "void %s_destroy(%s_model *m) { ctxrt_model_destroy((CtxrtModel *)m); }\n\n"
                 "const void *%s_descriptor(void) { return &%s_desc; }\n",
                 n, n, n, n, n, n);
  ctx_output_model_api(c, b->p, n);
}

static void model_source(CtxBuf *c, const CtxBuild *b) {
  ctx_buf_printf(c, "/* %s_model.c — the model '%s' for libctxrt: its descriptor and the API\n"
                 " * of %s.h. Generated by `ctx build` from %s; do not edit. */\n"
                 "#include \"ctxrt.h\"\n#include \"%s.h\"\n\n#include <stdio.h>\n\n",
                 b->name, b->name, b->name, b->s->opts.files[0], b->name);
  model_desc(c, b);
  model_api(c, b);
}

void ctx_build_header(CtxBuf *h, const CtxBuild *b) {
  header_comment(h, b);
  header_api(h, b);
}

void ctx_build_model_source(CtxBuf *c, const CtxBuild *b) { model_source(c, b); }
