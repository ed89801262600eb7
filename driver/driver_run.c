/* driver_run.c — `ctx run`: a model on input structures, compiled (the
 * default) or through the float64 reference interpreter (--interp).
 *
 *   MODEL.ctx --pipeline (parse, sema, RA)--> RaProgram
 *       --ilir_lower, cg_jit_compile--> a JIT-compiled kernel (not --interp)
 *   --input FILE | --gen SPEC | a bundled sample --libctxrt--> forest, validated
 *       against what the RaProgram reads (kind, arity, values, word ids)
 *   --weights FILE | seeded defaults --> float32 tensors (the kernel's) and
 *       float64 copies (the interpreter's)
 *   per batch of --batch B structures (default: all), --repeat R times:
 *       the kernel over the linearized batch (driver_jit.c) or ra_interp_run
 *   --> rows --> --output OUT.npy (float32 compiled, float64 interpreted), or
 *   a summary on stdout; then one `ran:` line saying what ran (engine, threads,
 *   weights, schedule, output); --time adds a line of latencies per batch and
 *   one of throughput (structures, nodes and GFLOP/s, FLOPs counted on RA by
 *   driver_flops.c); a long run shows its progress on stderr when that is a
 *   terminal
 *
 * Command-line problems exit 2 before anything is compiled; model errors exit 1
 * through the pipeline's diagnostics; bad input data or weights exit 3 with
 * libctxrt's `FILE:LINE: error: ...` message. Everything a run allocates outside
 * the session's arena hangs off one CtxRun and is freed by run_free. The summary
 * is deterministic (language tests compare it): it names the input by its base
 * name, never by a path.
 */
#include "driver/driver.h"
#include "driver/driver_jit.h"
#ifdef CTX_HAVE_JIT
#include "codegen/codegen.h"
#include "driver/driver_profile.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef CTX_SOURCE_DIR
#define CTX_SOURCE_DIR "." /* set by driver/CMakeLists.txt */
#endif

/* The bundled samples hold word ids below this (the zoo's default V). */
#define SAMPLE_VOCAB 20000
/* tree_sample.nodes has nodes with up to this many children. */
#define SAMPLE_ARITY 3
/* The summary shows this many rows and values per row. */
enum { SUMMARY_ROWS = 5, SUMMARY_VALUES = 6 };

typedef struct {
  CtxSession *s;
  const CtxRunOptions *o;
  const RaProgram *p;
  CtxrtVocab *vocab;
  CtxrtForest *forest;
  CtxrtWeights *weights;
  double **params; /* [p->nparams] float64 copies, RaParam order */
  double *out;     /* rows x p->out_shape.size (the summary prints these) */
  float *fout;     /* the same rows from the compiled kernel */
  int64_t rows;
#ifdef CTX_HAVE_JIT
  IlirKernel *k;
  CgJit *jit;
  CtxModelDesc desc;
  CtxrtModel *model;
  CtxBuf ptx; /* --target cuda: the kernel's PTX (the descriptor's) */
  CtxProfile *prof; /* --profile */
#endif
  char *sample; /* path of the bundled sample read, if any */
  int32_t threads; /* the compiled kernel's (1 for the interpreter) */
  CtxBuf timing; /* --time: the lines printed last */
  CtxrtError err;
} CtxRun;

/* ---- command line ------------------------------------------------------- */

static int run_usage(const char *fmt, const char *arg) {
  return ctx_usage_error("run", CTX_RUN_USAGE, fmt, arg);
}

/* The value of option [name] at argv[*i]: `NAME=V` or `NAME V`. NULL when
 * argv[*i] is another option; "" when the value is missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != 0) return NULL;
  return *i + 1 < argc ? argv[++*i] : "";
}

static bool parse_u64(const char *s, uint64_t *out) {
  char *end;
  if (*s < '0' || *s > '9') return false;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != 0 || errno == ERANGE) return false;
  *out = (uint64_t)v;
  return true;
}

/* The options that take a path or spec, and where they go. */
typedef struct {
  const char *name;
  size_t offset; /* of a `const char *` in CtxRunOptions */
} PathOption;

static const PathOption path_options[] = {
    {"--weights", offsetof(CtxRunOptions, weights)},
    {"--input", offsetof(CtxRunOptions, input)},
    {"--gen", offsetof(CtxRunOptions, gen)},
    {"--vocab", offsetof(CtxRunOptions, vocab)},
    {"--conllu-column", offsetof(CtxRunOptions, conllu_column)},
    {"--unk", offsetof(CtxRunOptions, unk)},
    {"--output", offsetof(CtxRunOptions, output)},
};
enum { NUM_PATH_OPTIONS = sizeof path_options / sizeof path_options[0] };

/* Stores [val] of the valued option [name]. Returns 0 or an exit code. */
static int set_value(CtxRunOptions *r, const char *name, const char *val) {
  if (*val == 0) return run_usage("option '%s' needs a value", name);
  for (int k = 0; k < NUM_PATH_OPTIONS; k++) {
    if (strcmp(name, path_options[k].name) != 0) continue;
    const char **slot = (const char **)((char *)r + path_options[k].offset);
    if (*slot) return run_usage("option '%s' given twice", name);
    *slot = val;
    return 0;
  }
  if (strcmp(name, "--device") == 0) {
    uint64_t n;
    if (!parse_u64(val, &n) || n > INT32_MAX)
      return run_usage("option '--device' needs a GPU number (0, 1, ...), found '%s'", val);
    if (r->device) return run_usage("option '%s' given twice", name);
    r->device = val;
    return 0;
  }
  if (strcmp(name, "--format") == 0) {
    if (strcmp(val, "ptb") == 0)
      r->format = CTX_FORMAT_PTB;
    else if (strcmp(val, "nodes") == 0)
      r->format = CTX_FORMAT_NODES;
    else if (strcmp(val, "conllu") == 0)
      r->format = CTX_FORMAT_CONLLU;
    else
      return run_usage("unknown format '%s' for --format (formats: ptb, nodes, conllu)", val);
    return 0;
  }
  uint64_t *num = strcmp(name, "--batch") == 0    ? &r->batch
                  : strcmp(name, "--repeat") == 0 ? &r->repeat
                  : strcmp(name, "--threads") == 0 ? &r->threads
                                                   : &r->seed;
  if (num == &r->seed && !parse_u64(val, num))
    return run_usage("option '--seed' needs a non-negative integer, found '%s'", val);
  if (num != &r->seed && (!parse_u64(val, num) || *num == 0 || *num > INT32_MAX)) {
    char fmt[96];
    snprintf(fmt, sizeof fmt, "option '%s' needs a positive integer, found '%%s'", name);
    return run_usage(fmt, val);
  }
  return 0;
}

int ctx_run_option(int argc, char **argv, int *i, CtxOptions *o) {
  static const char *const valued[] = {"--weights", "--input", "--gen",   "--vocab",
                                       "--output",  "--format", "--seed", "--batch",
                                       "--repeat",  "--threads", "--conllu-column",
                                       "--unk",     "--device"};
  const char *a = argv[*i];
  if (strcmp(a, "--interp") == 0) {
    o->run.interp = true;
  } else if (strcmp(a, "--time") == 0) {
    o->run.time = true;
  } else if (strcmp(a, "--profile") == 0) {
    o->run.profile = true;
  } else if (strcmp(a, "--perf-map") == 0) {
    o->run.perf_map = true;
  } else if (strcmp(a, "--perf-jitdump") == 0) {
    o->run.jitdump = true;
  } else if (strcmp(a, "--no-cache") == 0) {
    o->run.no_cache = true;
  } else if (strcmp(a, "--all-nodes") == 0) {
    o->run.all_nodes = true;
  } else if (strncmp(a, "--dump", 6) == 0 || strncmp(a, "--emit", 6) == 0 ||
             strcmp(a, "--syntax-only") == 0) {
    run_usage("option '%s' does not apply to 'ctx run'", a);
    return CTX_OPT_BAD;
  } else {
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
      const char *val = opt_value(argc, argv, i, valued[k]);
      if (val) return set_value(&o->run, valued[k], val) ? CTX_OPT_BAD : CTX_OPT_TAKEN;
    }
    return CTX_OPT_NOT_MINE;
  }
  return CTX_OPT_TAKEN;
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The format an input file's extension implies (docs/formats.md). */
static CtxFormat format_of(const char *path) {
  if (has_suffix(path, ".ptb") || has_suffix(path, ".txt") || has_suffix(path, ".trees"))
    return CTX_FORMAT_PTB;
  if (has_suffix(path, ".nodes")) return CTX_FORMAT_NODES;
  if (has_suffix(path, ".conllu")) return CTX_FORMAT_CONLLU;
  return CTX_FORMAT_AUTO;
}

/* The checks that need the whole command line. Returns 0 or an exit code. */
static int check_command(CtxOptions *opts) {
  CtxRunOptions *r = &opts->run;
  if (opts->nfiles != 1)
    return run_usage(opts->nfiles ? "ctx run takes one model file, found %s"
                                  : "no model file%s",
                     opts->nfiles ? opts->files[1] : "");
#ifndef CTX_HAVE_JIT
  if (!r->interp) /* built without LLVM: the interpreter is the only engine */
    fputs("ctx: note: built without LLVM; running the float64 reference interpreter "
          "(--interp)\n", stderr);
  r->interp = true;
#endif
  if (r->interp && (r->profile || r->perf_map || r->jitdump))
    return run_usage("%s applies to the compiled kernel, not to --interp",
                     r->profile ? "--profile" : r->perf_map ? "--perf-map" : "--perf-jitdump");
  if (r->device && (opts->target != CTX_TARGET_CUDA || opts->gpu_on_cpu || r->interp))
    return run_usage("--device picks the GPU of --target cuda (without --on-cpu and "
                     "--interp)%s", "");
  if (r->input && r->gen) return run_usage("give --input or --gen, not both%s", "");
  if (r->format != CTX_FORMAT_AUTO && !r->input)
    return run_usage("--format applies to --input only%s", "");
  if (r->vocab && !r->input) return run_usage("--vocab applies to --input only%s", "");
  if (r->input && r->format == CTX_FORMAT_AUTO) r->format = format_of(r->input);
  if (r->input && r->format == CTX_FORMAT_AUTO)
    return run_usage("cannot tell the format of '%s' from its extension; give --format "
                     "ptb, nodes or conllu",
                     r->input);
  if (r->vocab && r->format != CTX_FORMAT_PTB && r->format != CTX_FORMAT_CONLLU)
    return run_usage("--vocab applies to bracketed trees and CoNLL-U (--format ptb, "
                     "conllu) only%s", "");
  if (r->unk && !r->vocab) return run_usage("--unk applies with --vocab only%s", "");
  if (r->conllu_column && r->format != CTX_FORMAT_CONLLU)
    return run_usage("--conllu-column applies to CoNLL-U input (--format conllu) only%s", "");
  if (r->conllu_column && ctxrt_conllu_column(r->conllu_column) < 0)
    return run_usage("unknown CoNLL-U column '%s' for --conllu-column (columns: FORM, "
                     "LEMMA, UPOS, XPOS)", r->conllu_column);
  return 0;
}

/* More threads than cores only wait at each level's barrier for the ones the
 * system has not scheduled. */
static void warn_threads(const CtxRunOptions *r) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (r->interp || !r->threads || cores <= 0 || (long)r->threads <= cores) return;
  fprintf(stderr,
          "ctx: warning: --threads %" PRIu64 " is more than the %ld cores online; the "
          "threads beyond them make every level wait\n",
          r->threads, cores);
}

/* ---- input -------------------------------------------------------------- */

/* The model's per-node values as the generators make them: an optional word
 * id first, then floats. False when they look otherwise. */
static bool gen_layout(const RaProgram *p, int64_t *vocab, int64_t *features) {
  *vocab = 0;
  *features = p->values_per_node;
  for (int k = 0; k < p->ninputs; k++) {
    const RaInput *in = &p->inputs[k];
    if (!in->is_int) continue;
    if (k != 0 || in->row.size != 1) return false;
    *vocab = in->bound > 0 ? in->bound : SAMPLE_VOCAB;
    *features -= 1;
  }
  return true;
}

/* Generates [g], with vocab, features and values filled from the model where
 * the spec leaves them open. */
static CtxrtStatus gen_input(CtxRun *r, CtxrtGenSpec *g) {
  int64_t vocab, features;
  if (gen_layout(r->p, &vocab, &features)) {
    if (!g->vocab) g->vocab = vocab;
    if (!g->features) g->features = features;
  }
  if (g->values == CTXRT_GEN_VALUES_DEFAULT && ctx_reads_at_internal(r->p))
    g->values = CTXRT_GEN_VALUES_ALL;
  return ctxrt_generate(g, &r->forest, &r->err);
}

/* The bundled sample file that fits [p] (--help lists them), or NULL. */
static const char *sample_name(const RaProgram *p) {
  if (p->ninputs != 1 || !p->inputs[0].is_int || p->inputs[0].row.size != 1) return NULL;
  if (p->inputs[0].bound > 0 && p->inputs[0].bound < SAMPLE_VOCAB) return NULL;
  switch (p->kind) {
  case SEMA_TREE:
    if (p->max_arity == 2 && !p->inputs[0].read_at_internal) return "sst_sample.ptb";
    return p->max_arity == 0 || p->max_arity >= SAMPLE_ARITY ? "tree_sample.nodes" : NULL;
  case SEMA_SEQUENCE:
    return "seq_sample.nodes";
  default:
    return NULL;
  }
}

static bool readable(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f) fclose(f);
  return f != NULL;
}

/* The sample [name]: in data/ next to [model], else in the source tree's
 * examples/data/. A malloc'd path, or NULL when neither exists. */
static char *find_sample(const char *model, const char *name) {
  const char *slash = strrchr(model, '/');
  int dirlen = slash ? (int)(slash - model) : 1;
  size_t size = strlen(model) + strlen(CTX_SOURCE_DIR) + strlen(name) + 32;
  char *path = ctx_xmalloc(size);
  snprintf(path, size, "%.*s/data/%s", dirlen, slash ? model : ".", name);
  if (readable(path)) return path;
  snprintf(path, size, "%s/examples/data/%s", CTX_SOURCE_DIR, name);
  if (readable(path)) return path;
  free(path);
  return NULL;
}

/* A small generated batch of the model's structure kind: the default input
 * when no sample file fits. */
static CtxrtStatus default_gen(CtxRun *r) {
  const RaProgram *p = r->p;
  CtxrtGenSpec g;
  memset(&g, 0, sizeof g);
  g.count = 3;
  if (p->kind == SEMA_DAG) {
    g.shape = CTXRT_GEN_GRID;
    g.size = 3;
    g.size2 = 4;
  } else if (p->kind == SEMA_SEQUENCE) {
    g.shape = CTXRT_GEN_SEQUENCE;
    g.size = 8;
  } else if (p->max_arity == 2) {
    g.shape = CTXRT_GEN_BINARY;
    g.size = 6;
  } else if (p->max_arity == 1) {
    g.shape = CTXRT_GEN_CHAIN;
    g.size = 5;
  } else {
    g.shape = CTXRT_GEN_NARY;
    g.size = 10;
    g.size2 =
        p->max_arity > 0 && p->max_arity < SAMPLE_ARITY ? p->max_arity : SAMPLE_ARITY;
  }
  return gen_input(r, &g);
}

static CtxrtStatus read_file(CtxRun *r, const char *path, CtxFormat format) {
  if (format == CTX_FORMAT_NODES) return ctxrt_read_nodes_file(path, &r->forest, &r->err);
  if (r->o->vocab) {
    CtxrtStatus st = ctxrt_vocab_read_file(r->o->vocab, &r->vocab, &r->err);
    if (!st && r->o->unk)
      st = ctxrt_vocab_set_fallback(r->vocab, r->o->unk, strlen(r->o->unk), &r->err);
    if (st) return st;
  }
  if (format == CTX_FORMAT_CONLLU) {
    const char *col = r->o->conllu_column ? r->o->conllu_column : "FORM";
    return ctxrt_read_conllu_file(path, r->vocab, ctxrt_conllu_column(col), &r->forest,
                                  &r->err);
  }
  return ctxrt_read_ptb_file(path, r->vocab, &r->forest, &r->err);
}

/* --input, --gen, or the default: a bundled sample or a generated batch. */
static CtxrtStatus read_input(CtxRun *r) {
  if (r->o->input) return read_file(r, r->o->input, r->o->format);
  if (r->o->gen) {
    CtxrtGenSpec g;
    CtxrtStatus st = ctxrt_gen_parse(r->o->gen, &g, &r->err);
    return st ? st : gen_input(r, &g);
  }
  const char *name = sample_name(r->p);
  if (name && (r->sample = find_sample(r->s->opts.files[0], name)))
    return read_file(r, r->sample,
                     has_suffix(name, ".ptb") ? CTX_FORMAT_PTB : CTX_FORMAT_NODES);
  return default_gen(r);
}

/* Checks the forest against what RA says the model reads (ctx_input_spec). */
static CtxrtStatus validate(CtxRun *r) {
  CtxrtSpec spec;
  int64_t *bound = ctx_input_spec(r->p, &spec);
  CtxrtStatus st = ctxrt_forest_validate(r->forest, &spec, &r->err);
  free(bound);
  return st;
}

/* ---- weights ------------------------------------------------------------ */

/* The note that a weights file's F64, F16 or BF16 tensors were converted. */
static void note_converted(const CtxRun *r) {
  char note[CTXRT_MSG_SIZE];
  ctxrt_weights_note(r->weights, r->o->weights, note, sizeof note);
  if (note[0]) fprintf(stderr, "%s\n", note);
}

/* After the weights check failed: the -D values that would make the file's
 * shapes fit, when there are some (printed after the check's errors). */
static void note_fit(CtxRun *r) {
  CtxBuf b;
  ctx_buf_init(&b);
  if (ctx_params_fit(r->s, r->s->opts.files[0], r->weights, &b)) {
    size_t n = strlen(r->err.msg);
    snprintf(r->err.msg + n, sizeof r->err.msg - n,
             "\n%s: note: the file's shapes fit the model with %s", r->o->weights,
             ctx_buf_str(&b));
  }
  ctx_buf_free(&b);
}

/* Do the default weights of [ps] fit this machine's memory, with what the
 * run makes of them (the compiled kernel's packed copies of its weight
 * blocks; the interpreter's float64 copies)? Else says so (a system that
 * overcommits would hand out the memory and then stop the process as it is
 * written: treelstm -D H=30000's 22 GB of weights passed a check of the
 * weights alone on a 25 GB machine, then the packed copy of U_iou ran it
 * out of memory). */
static bool weights_fit(CtxRun *r, const CtxrtParam *ps, int n) {
  double bytes = 0, copies = 0;
  for (int k = 0; k < n; k++) {
    double numel = 1;
    for (int d = 0; d < ps[k].ndim; d++) numel *= (double)ps[k].shape[d];
    bytes += numel * sizeof(float);
  }
  if (r->o->interp) copies = bytes * 2; /* doubles */
  for (int b = 0; !r->o->interp && r->k && b < r->k->nbufs; b++) {
    const IlirBuf *pb = &r->k->bufs[b];
    if (pb->kind == ILIR_BUF_PACKED) copies += (double)pb->pack.rows * pb->pack.cols * sizeof(float);
  }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  double have = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
  if (!have || bytes + copies <= have) return true;
  r->err.status = CTXRT_ERR_NOMEM;
  r->err.line = 0;
  if (copies > 0)
    snprintf(r->err.msg, sizeof r->err.msg, "error: the default weights (%.1f GB) and %s (%.1f "
             "GB) need %.1f GB, more than this machine's %.1f GB of memory", bytes / 1e9,
             r->o->interp ? "the interpreter's float64 copies of them"
                          : "the kernel's packed copies of their blocks",
             copies / 1e9, (bytes + copies) / 1e9, have / 1e9);
  else
    snprintf(r->err.msg, sizeof r->err.msg, "error: the default weights need %.1f GB, more "
             "than this machine's %.1f GB of memory", bytes / 1e9, have / 1e9);
  return false;
}

/* --weights FILE, checked against the model, or the seeded defaults; then
 * float64 copies in RaParam order. Returns a status, or -1 after an internal
 * error reported to the session. */
static int load_weights(CtxRun *r) {
  const RaProgram *p = r->p;
  CtxrtParam *ps = ctx_model_params(p);
  CtxrtStatus st;
  if (r->o->weights) {
    st = ctxrt_st_read_file(r->o->weights, &r->weights, &r->err);
    if (!st) note_converted(r);
    if (!st) st = ctxrt_weights_check(r->weights, r->o->weights, ps, p->nparams, &r->err);
    if (st == CTXRT_ERR_INVALID) note_fit(r);
  } else {
    if (!weights_fit(r, ps, p->nparams)) {
      free(ps);
      return CTXRT_ERR_NOMEM;
    }
    st = ctxrt_weights_create(ps, p->nparams, &r->weights, &r->err);
    if (!st) ctxrt_weights_init(r->weights, r->o->seed); /* else out of memory: reported */
  }
  free(ps);
  if (st) return r->s->diag.ice ? -1 : (int)st;
  if (!r->o->interp) return 0; /* the kernel reads the float32 tensors */
  r->params = calloc((size_t)p->nparams + 1, sizeof *r->params);
  if (!r->params) ctx_oom();
  for (int k = 0; k < p->nparams; k++) {
    const CtxrtTensor *t = ctxrt_weights_find(r->weights, p->params[k].name);
    r->params[k] = ctx_xmalloc(((size_t)t->numel + 1) * sizeof(double));
    for (int64_t e = 0; e < t->numel; e++)
      r->params[k][e] = t->data[e];
  }
  return 0;
}

/* ---- output ------------------------------------------------------------- */

/* .npy or .npz, one array per field (driver_output.c). */
static int write_npy(CtxRun *r) {
  const void *data = r->fout ? (const void *)r->fout : (const void *)r->out;
  if (ctx_output_write(r->o->output, r->p, r->rows, data, !r->fout, &r->err)) return -1;
  return 0;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* What one output row is, for the summary. */
static const char *row_meaning(const CtxRun *r) {
  if (r->o->all_nodes) return "one row per node";
  switch (r->p->kind) {
  case SEMA_TREE:
    return "one row per tree (its root)";
  case SEMA_DAG:
    return "one row per sink";
  default:
    return "one row per sequence (its last element)";
  }
}

/*   model treelstm: 8 trees, 211 nodes from sst_sample.ptb
 *   output [8, 256], one row per tree (its root):
 *     0: 0.0123 -0.0456 ... (at most 6 values, at most 5 rows)
 *     ... (3 more rows)                                          */
static void print_summary(const CtxRun *r, FILE *out) {
  const CtxrtForest *f = r->forest;
  fprintf(out, "model %s: %d %s%s, %d node%s from %s\n", r->p->name, (int)f->num_structs,
          ctxrt_kind_name(f->kind), f->num_structs == 1 ? "" : "s", (int)f->num_nodes,
          f->num_nodes == 1 ? "" : "s", base_name(f->name));
  ctx_output_summary(out, r->p, r->rows, r->out, row_meaning(r), SUMMARY_ROWS, SUMMARY_VALUES);
}

/*   ran: engine=jit threads=2 weights=seed:0 schedule=default output=summary
 * What ran, on every run: the engine (jit: the compiled float32 kernel;
 * interpreter: the float64 one), its threads, the weights (a file's base name,
 * or the seed of the default ones), the schedule (a -s file's base name, or
 * the default) and where the outputs went (the --output path, or this
 * summary). */
static void print_ran(const CtxRun *r, FILE *out) {
  const CtxRunOptions *o = r->o;
  fprintf(out, "ran: engine=%s threads=%d weights=", o->interp ? "interpreter" : "jit",
          (int)r->threads);
  if (o->weights) fputs(base_name(o->weights), out);
  else fprintf(out, "seed:%" PRIu64, o->seed);
  fprintf(out, " schedule=%s output=%s\n",
          r->s->opts.schedule ? base_name(r->s->opts.schedule) : "default",
          o->output ? o->output : "summary");
}

/* ---- the run ------------------------------------------------------------ */

static void run_free(CtxRun *r) {
  if (r->params)
    for (int k = 0; k < r->p->nparams; k++)
      free(r->params[k]);
  free(r->params);
  free(r->out);
  free(r->fout);
  free(r->sample);
  ctx_buf_free(&r->timing);
#ifdef CTX_HAVE_JIT
  ctxrt_model_destroy(r->model);
  ctx_model_desc_free(&r->desc);
  cg_jit_free(r->jit);
  ctx_buf_free(&r->ptx);
  ctx_profile_free(r->prof);
#endif
  ctxrt_weights_destroy(r->weights);
  ctxrt_forest_destroy(r->forest);
  ctxrt_vocab_destroy(r->vocab);
}

/* Prints the failure in r->err; returns its exit code: a bad --gen spec is a
 * bad command line, anything else bad runtime data. */
static int report(const CtxRun *r) {
  const char *msg = r->err.msg[0] ? r->err.msg : "error: failed without a message";
  fprintf(stderr, "%s%s\n", strncmp(msg, "error: ", 7) == 0 ? "ctx: " : "", msg);
  return r->err.status == CTXRT_ERR_ARG ? CTX_EXIT_USAGE : CTX_EXIT_RUNTIME;
}

/* Lowers the program and JIT-compiles its kernel (not with --interp, which
 * still checks a -s schedule). Returns 0 or an exit code after the
 * diagnostics were reported. */
static int compile_kernel(CtxRun *r) {
  if (r->o->interp && r->s->opts.schedule && !ctx_pipeline_kernel(r->s, r->p))
    return ctx_session_exit_code(r->s);
#ifdef CTX_HAVE_JIT
  if (r->o->interp) return 0;
  r->k = ctx_pipeline_kernel(r->s, r->p);
  if (r->k && r->s->opts.target == CTX_TARGET_CUDA && !r->s->opts.gpu_on_cpu) {
    ctx_buf_init(&r->ptx);
    if (cg_emit_ptx(&r->ptx, r->k, r->s->opts.gpu_arch, false, &r->s->diag)) return 0;
  } else if (r->k) {
    if (r->o->profile) r->prof = ctx_profile_create(r->k);
    CgJitOptions jo = {.profile = r->prof ? ctx_profile_plan(r->prof) : NULL,
                       .jitdump = r->o->jitdump,
                       .cache_dir = r->o->no_cache ? NULL : ctx_kernel_cache_dir()};
    r->jit = cg_jit_compile_with(r->k, &jo, &r->s->diag);
  }
  char path[64];
  if (r->jit && r->o->perf_map && !ctx_perf_map_write(r->jit, path, sizeof path))
    fprintf(stderr, "ctx: warning: cannot write '%s'\n", path);
  if (r->jit && r->o->jitdump && !cg_jit_dumping(r->jit))
    fputs("ctx: warning: this LLVM has no perf support: no jitdump written\n", stderr);
  if (r->jit) return 0;
  int rc = ctx_session_exit_code(r->s);
  return rc ? rc : CTX_EXIT_ICE;
#else
  (void)r;
  return 0;
#endif
}

/* Runs the engine over [f], writing its rows from row [at] on. */
static CtxrtStatus run_one(CtxRun *r, const CtxrtForest *f, int64_t at) {
  size_t size = (size_t)r->p->out_shape.size;
#ifdef CTX_HAVE_JIT
  if (!r->o->interp)
    return ctxrt_model_run(r->model, f, r->o->all_nodes, r->fout + (size_t)at * size,
                           &r->err);
#endif
  double *rows = NULL;
  int64_t n = 0;
  CtxrtStatus st = ra_interp_run(r->p, f, (const double *const *)r->params, r->o->all_nodes,
                                 &rows, &n, &r->err);
  if (!st && n) memcpy(r->out + (size_t)at * size, rows, (size_t)n * size * sizeof(double));
  free(rows);
  return st;
}

/* ---- batches ---------------------------------------------------------------- */

/* Structures [first, first + count) of [f] as a forest of their own (node
 * indices rebased; names, values and labels shared with [f]); free it with
 * slice_free, not ctxrt_forest_destroy. */
static CtxrtForest *slice_forest(const CtxrtForest *f, int32_t first, int32_t count) {
  CtxrtForest *s = calloc(1, sizeof *s);
  if (!s) ctx_oom();
  int32_t n0 = f->struct_begin[first], n1 = f->struct_begin[first + count];
  int32_t d0 = f->dep_begin[n0], v0 = f->val_begin[n0];
  s->kind = f->kind;
  s->name = f->name;
  s->num_structs = count;
  s->num_nodes = n1 - n0;
  s->struct_begin = ctx_xmalloc(((size_t)count + 1) * sizeof(int32_t));
  for (int32_t i = 0; i <= count; i++) s->struct_begin[i] = f->struct_begin[first + i] - n0;
  s->struct_line = f->struct_line ? f->struct_line + first : NULL;
  s->id = f->id ? f->id + n0 : NULL;
  s->line = f->line ? f->line + n0 : NULL;
  s->dep_begin = ctx_xmalloc(((size_t)s->num_nodes + 1) * sizeof(int32_t));
  s->val_begin = ctx_xmalloc(((size_t)s->num_nodes + 1) * sizeof(int32_t));
  for (int32_t i = 0; i <= s->num_nodes; i++) {
    s->dep_begin[i] = f->dep_begin[n0 + i] - d0;
    s->val_begin[i] = f->val_begin[n0 + i] - v0;
  }
  size_t ndep = (size_t)(f->dep_begin[n1] - d0);
  s->dep = ctx_xmalloc((ndep + 1) * sizeof(int32_t));
  for (size_t i = 0; i < ndep; i++) s->dep[i] = f->dep[(size_t)d0 + i] - n0;
  s->val = f->val ? f->val + v0 : NULL;
  s->val_is_int = f->val_is_int ? f->val_is_int + v0 : NULL;
  s->label = f->label ? f->label + n0 : NULL;
  s->labels = f->labels;
  return s;
}

static void slice_free(CtxrtForest *s) {
  if (!s) return;
  free(s->struct_begin);
  free(s->dep_begin);
  free(s->val_begin);
  free(s->dep);
  free(s);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/*   time: median_ms=0.412 p10_ms=0.398 p90_ms=0.455 batches=8 batch_size=25
 *   throughput: structures_per_s=60679.6 nodes_per_s=1.65e+06 gflop_per_s=10.8 ...
 * The latencies of the [n] timed batch runs [ms] ([reps] passes over the
 * input); the throughput of a pass at the median batch time (so that a few
 * slow runs on a busy machine do not set it, as the latencies' median). */
static void format_times(CtxRun *r, double *ms, int64_t n, int64_t batch, int64_t reps) {
  qsort(ms, (size_t)n, sizeof *ms, cmp_double);
  double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  ctx_buf_printf(&r->timing, "time: median_ms=%.4f p10_ms=%.4f p90_ms=%.4f batches=%" PRId64
                     " batch_size=%" PRId64 "\n",
          median, ms[(n - 1) / 10], ms[(n - 1) - (n - 1) / 10], n, batch);
  double flop = ctx_flops_forest(r->p, r->forest);
  double secs = median * (double)(n / reps) / 1e3;
  if (secs <= 0) secs = 1e-9; /* below the clock's resolution */
  ctx_buf_printf(&r->timing,
                 "throughput: structures_per_s=%.1f nodes_per_s=%.4g gflop_per_s=%.4g "
                 "flop_per_pass=%.4g\n",
                 (double)r->forest->num_structs / secs, (double)r->forest->num_nodes / secs,
                 flop / secs / 1e9, flop);
}

/* Progress of a long run on stderr, when it is a terminal: after the first
 * second (CTX_PROGRESS_AFTER_MS milliseconds when set: for tests), at most
 * four times a second, overwriting one line. */
typedef struct {
  bool on;
  double start, last, after;
  int64_t total;
} Progress;

static void progress_init(Progress *pg, int64_t total) {
  const char *env = getenv("CTX_PROGRESS_AFTER_MS");
  pg->on = isatty(STDERR_FILENO) == 1;
  pg->start = now_ms();
  pg->last = 0;
  pg->after = env && *env ? atof(env) : 1000;
  pg->total = total;
}

static void progress_tick(Progress *pg, int64_t done) {
  if (!pg->on) return;
  double t = now_ms();
  if (t - pg->start < pg->after || t - pg->last < 250) return;
  pg->last = t;
  double rate = (double)done / ((t - pg->start) / 1e3);
  fprintf(stderr, "\rctx: batch %" PRId64 "/%" PRId64 ", %.1f batches/s, %.0f s left\033[K",
          done, pg->total, rate, rate > 0 ? (double)(pg->total - done) / rate : 0.0);
  fflush(stderr);
}

static void progress_end(const Progress *pg) {
  if (pg->on && pg->last > 0) fputs("\r\033[K", stderr);
}

/* The forest in batches of --batch structures, --repeat times (after a
 * warm-up pass with --time), each batch timed (linearization included). The
 * rows of the last repetition stay. */
static CtxrtStatus run_batches(CtxRun *r) {
  const CtxrtForest *f = r->forest;
  int64_t s = f->num_structs, batch = r->o->batch && (int64_t)r->o->batch < s ? (int64_t)r->o->batch : s;
  int64_t nb = batch ? (s + batch - 1) / batch : 0, reps = r->o->repeat ? (int64_t)r->o->repeat : 1;
  /* --profile shows each batch's faster half of its runs (driver_profile.c):
   * of several batches, twice each unless --repeat says */
  if (r->o->profile && !r->o->repeat && nb > 1) reps = 2;
  if (nb <= 1 && reps == 1 && !r->o->time && !r->o->profile) return run_one(r, f, 0);
  CtxrtForest **slices = ctx_xmalloc(((size_t)nb + 1) * sizeof *slices);
  int64_t *at = ctx_xmalloc(((size_t)nb + 1) * sizeof *at);
  double *ms = ctx_xmalloc(((size_t)(nb * reps) + 1) * sizeof *ms);
  for (int64_t b = 0, row = 0; b < nb; b++) {
    int32_t first = (int32_t)(b * batch), count = (int32_t)(s - first < batch ? s - first : batch);
    slices[b] = slice_forest(f, first, count);
    at[b] = row;
    row += r->o->all_nodes ? slices[b]->num_nodes : ctxrt_forest_outputs(slices[b], NULL);
  }
  int64_t warm = r->o->time || r->o->profile ? nb + 1 : 0, largest = 0;
  for (int64_t b = 1; b < nb; b++)
    if (slices[b]->num_nodes > slices[largest]->num_nodes) largest = b;
  Progress pg;
  progress_init(&pg, warm + nb * reps);
  CtxrtStatus st = CTXRT_OK;
  /* with --time, untimed first: the batch of the most nodes, so that the
   * model's buffers grow to their final size at once, then one pass (thread
   * team started, caches warm), as the bench's baselines do. Buffers that
   * grew during the pass instead left the batch after the last growth up to
   * 20% slower in the first timed pass (mvrnn H=64 B=10: 2.2 ms, 1.87 from
   * then on). */
  for (int64_t b = 0; b < warm && !st; b++) {
    int64_t which = b == 0 ? largest : b - 1;
    st = run_one(r, slices[which], at[which]);
    progress_tick(&pg, b + 1);
  }
#ifdef CTX_HAVE_JIT
  if (r->prof) ctx_profile_start(r->prof, r->jit, r->model);
#endif
  for (int64_t i = 0; i < nb * reps && !st; i++) {
    double t0 = now_ms();
    st = run_one(r, slices[i % nb], at[i % nb]);
    ms[i] = now_ms() - t0;
    progress_tick(&pg, warm + i + 1);
#ifdef CTX_HAVE_JIT
    if (r->prof) ctx_profile_add_run(r->prof, r->jit, r->model, i % nb, ms[i]);
#endif
  }
  progress_end(&pg);
#ifdef CTX_HAVE_JIT
  if (!st && r->prof)
    ctx_profile_report(r->prof, r->jit, ctxrt_model_threads(r->model), r->p->name, &r->timing);
#endif
  if (!st && r->o->time && nb) format_times(r, ms, nb * reps, batch, reps);
  for (int64_t b = 0; b < nb; b++) slice_free(slices[b]);
  free(slices);
  free(at);
  free(ms);
  return st;
}

/* Input, validation, weights, the kernel or the interpreter, the output. */
static int run_stages(CtxRun *r) {
  if (read_input(r) || validate(r)) return report(r);
  int rc = load_weights(r);
  if (rc < 0) return CTX_EXIT_ICE;
  if (rc) return report(r);
  size_t size = (size_t)r->p->out_shape.size;
  r->rows = r->o->all_nodes ? r->forest->num_nodes : ctxrt_forest_outputs(r->forest, NULL);
  r->out = calloc((size_t)r->rows * size + 1, sizeof *r->out);
  if (!r->out) ctx_oom();
#ifdef CTX_HAVE_JIT
  if (!r->o->interp) {
    r->fout = calloc((size_t)r->rows * size + 1, sizeof *r->fout);
    if (!r->fout) ctx_oom();
    ctx_model_desc_init(&r->desc, r->p, r->k, r->jit ? cg_jit_kernel(r->jit) : NULL);
    if (!r->jit) ctx_model_desc_cuda(&r->desc, r->k, ctx_buf_str(&r->ptx));
    /* the runtime reads the GPU's number where a built library's user sets it */
    if (r->o->device && setenv("CTXRT_CUDA_DEVICE", r->o->device, 1)) ctx_oom();
    if (ctxrt_model_create(&r->desc.desc, r->weights, &r->model, &r->err) ||
        ctxrt_model_set_threads(r->model, (int32_t)r->o->threads, &r->err))
      return report(r);
    r->threads = ctxrt_model_threads(r->model);
  }
#endif
  if (run_batches(r)) return report(r);
  if (r->fout)
    for (size_t i = 0; i < (size_t)r->rows * size; i++) r->out[i] = r->fout[i];
  if (r->o->output && write_npy(r)) return report(r);
  if (!r->o->output) print_summary(r, r->s->out);
  print_ran(r, r->s->out);
  fputs(ctx_buf_str(&r->timing), r->s->out);
  return CTX_EXIT_OK;
}

int ctx_run(CtxSession *s) {
  int rc = check_command(&s->opts);
  if (rc) return rc;
  CtxRun r;
  memset(&r, 0, sizeof r);
  r.s = s;
  r.o = &s->opts.run;
  r.threads = 1;
  ctx_buf_init(&r.timing);
  warn_threads(r.o);
  r.p = ctx_pipeline_ra(s, s->opts.files[0]);
  if (!r.p) {
    rc = ctx_session_exit_code(s);
    return rc ? rc : CTX_EXIT_ICE;
  }
  rc = compile_kernel(&r);
  if (!rc) rc = run_stages(&r);
  run_free(&r);
  return rc;
}
