/* repl.h — `ctx repl`, private to driver/: an interactive session that
 * JIT-runs models on sample trees (docs/repl.md).
 *
 * The session keeps the model as text: the file of :load (re-read by
 * :reload) and the items typed at the prompt, each typed input registered as
 * the source `<repl:N>` (N counts inputs from 1). A later item of the same
 * kind and name replaces an earlier one (a file's included). Whenever the
 * model is needed, a ReplBuild is made from that text: a fresh CtxSession
 * (sources, diagnostics to stderr, arena) in which every source is parsed and
 * the items assembled into one AstFile, then sema, RA, the kernel and its JIT
 * as far as the command needs. A build lives until the model changes; freeing
 * it frees its JIT module and everything the compiler allocated, so a long
 * session's memory stays flat.
 *
 * Expressions at the prompt (repl_expr.c) are compiled as one-node kernels
 * wrapped in a C function of their own signature (codegen.h, CgCall) and
 * called through libffi. Their values, and the weights, the input and the
 * last output, are the session's own (malloc'd, freed by repl_free).
 */
#ifndef CTX_REPL_H
#define CTX_REPL_H

#include "driver/driver.h"
#include "driver/driver_jit.h"
#ifdef CTX_HAVE_JIT
#include "codegen/codegen.h"
#endif

#include <signal.h>

/* One typed input holding items: its text and the keys of its items. */
typedef struct {
  char *name; /* "<repl:N>" */
  char *text;
  char **keys; /* "def lstm2", "output", ... (repl_item_key) */
  int nkeys;
} ReplSource;

/* A value bound with `let` at the prompt: a float32 tensor. */
typedef struct {
  char *name;
  int rank;
  long dims[SEMA_MAX_RANK];
  long size;
  float *data;
} ReplVar;

/* The model compiled from the session's text (see above). */
typedef struct {
  CtxSession s;
  AstFile *file;   /* the assembled model: file items not replaced, then typed */
  int model_src;   /* source id of the :load file in s, 0 when none */
  bool parsed;     /* every source parsed without errors */
  SemaModel *m;    /* after repl_build_check; NULL after errors */
  RaProgram *p;    /* when the model is complete (input, rec, output) */
  IlirKernel *k;
#ifdef CTX_HAVE_JIT
  CgJit *jit;
  CtxModelDesc desc;
  CtxrtModel *model;
  double compile_ms;
#endif
} ReplBuild;

typedef struct {
  FILE *out, *err;
  bool tty;
  int input_no; /* N of the newest <repl:N> */
  CtxOptions opts; /* -D (defines), -s, --disable as for ctx run */
  char *model_path, *model_text; /* :load FILE */
  ReplSource *typed;
  int ntyped;
  char *sched_path; /* -s / :schedule FILE (opts.schedule points here) */
  SemaDefine *defines; /* -D and :set, owned */
  int ndefines;
  char *weights_path; /* :weights FILE, or NULL: seeded */
  uint64_t seed;
  int threads;
  /* the input: trees typed with :tree, or a file, or a generator spec */
  CtxBuf trees;
  int ntrees;
  char *input_path;
  bool input_nodes; /* input_path is a node list */
  char *gen;
  /* what is compiled and loaded */
  ReplBuild *build;
  unsigned gen_no, build_gen; /* model changes; the build's */
  CtxrtWeights *weights;
  char *weights_key; /* the parameters (names and shapes) the weights are for */
  /* the last :run */
  float *last;
  int64_t last_rows;
  long last_size;
  int last_rank;
  long last_dims[SEMA_MAX_RANK];
  ReplVar *vars;
  int nvars;
  char *history_path;
  bool full_jit; /* CTX_REPL_JIT=full: compile as ctx run does */
  bool quit;
} Repl;

/* Set by the SIGINT handler, cleared at the prompt; long commands poll it. */
extern volatile sig_atomic_t ctx_repl_interrupted;

/* ---- repl_main.c ---------------------------------------------------------- */
/* `ctx repl` (the verb): option parsing is ctx_repl_option; then the loop. */

/* ---- repl_model.c: the model's text and builds ----------------------------- */
#ifdef CTX_HAVE_JIT
/* How the session JIT-compiles models and expressions (see repl_model.c). */
CgJitOptions repl_jit_options(const Repl *R);
#endif
void repl_model_free(Repl *R);
/* Replaces the model by the file [path]; false after printing why. */
bool repl_load(Repl *R, const char *path);
bool repl_reload(Repl *R);
/* The typed input [text] holding items, as source `<repl:N>`: parsed (syntax
 * errors reported, nothing kept), then kept, the items it replaces named. */
void repl_add_items(Repl *R, const char *text);
/* The key of [it] ("def NAME", "output", ...) in [a]. */
const char *repl_item_key(CtxArena *a, const AstItem *it);
/* The current build, made when the model changed: parsed and checked, with
 * RA when the model is complete. NULL after reporting errors ([need_ra]:
 * also an incomplete model is an error). */
ReplBuild *repl_build(Repl *R, bool need_ra);
/* The build with its kernel JIT-compiled and loaded with the weights. */
ReplBuild *repl_build_jit(Repl *R);
void repl_build_free(ReplBuild *b);
/* A fresh session holding the model's sources, its items assembled in [*file]
 * (the caller frees it with repl_session_close). False after syntax errors. */
bool repl_session_open(Repl *R, ReplBuild *b);
void repl_session_close(ReplBuild *b);
/* Marks the model changed (a new build at the next use). */
void repl_model_changed(Repl *R);
void repl_show(Repl *R);
void repl_params(Repl *R);
void repl_dump(Repl *R, const char *stage);
/* Names of the model for completion (functions, params, dims, variables),
 * appended to [out] (arena strings of the current build or the session). */
void repl_model_names(Repl *R, CtxVec *out, CtxArena *a);
/* Writes the canonical model to [path]; false after printing why. */
bool repl_write_model(Repl *R, const char *path);

/* ---- repl_run.c: input, weights, runs ---------------------------------------- */
void repl_run_free(Repl *R);
bool repl_add_tree(Repl *R, const char *text);
void repl_set_input(Repl *R, const char *path, bool nodes);
void repl_set_gen(Repl *R, const char *spec);
void repl_clear_input(Repl *R);
/* The weights for the parameters [ps] (the :weights file, else seeded), reused
 * while the parameters and the file or seed stay the same; replacing them
 * unloads the build's model first (it borrows them). NULL after printing
 * why. */
CtxrtWeights *repl_weights(Repl *R, const CtxrtParam *ps, int n);
/* Forgets the weights (a new :weights file or :seed). */
void repl_weights_changed(Repl *R);
void repl_cmd_run(Repl *R, bool all_nodes);
void repl_cmd_interp(Repl *R, bool all_nodes);
void repl_cmd_time(Repl *R, long reps);
void repl_cmd_save(Repl *R, const char *path);

/* ---- repl_expr.c: `let` and expressions ------------------------------------- */
/* Compiles, calls and prints the statement or expression [text]. */
void repl_eval(Repl *R, const char *text);
void repl_vars_free(Repl *R);
const ReplVar *repl_var(const Repl *R, const char *name);

/* ---- repl_cmd.c: the `:` commands -------------------------------------------- */
void repl_command(Repl *R, const char *line);
/* The name of command [i] ("load", ...), NULL past the last. */
const char *repl_command_name(int i);
/* Does command [name] take a file name? */
bool repl_command_takes_file(const char *name);

/* Prints `error: [fmt]` to the session's stderr. */
void repl_error(Repl *R, const char *fmt, ...) CTX_PRINTF(2, 3);
double repl_now_ms(void);

#endif
