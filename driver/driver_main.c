/* driver_main.c — `ctx`: the command line.
 *
 *   ctx <verb> [options] FILE...
 *
 * Each verb has its own options and help text; an unknown verb or option
 * prints a usage line and exits 2. Exit codes: 0 ok, 1 errors in the input,
 * 2 bad command line, 3 bad runtime data, 70 internal compiler error.
 */
#include "driver/driver.h"
#ifdef CTX_HAVE_JIT
#include "codegen/codegen.h"
#endif

#include <stdlib.h>
#include <string.h>

#define CTX_VERSION "0.1.0"

typedef struct {
  const char *name;
  const char *summary;
  const char *usage;
  const char *options; /* help text of the options, one per line */
  int (*run)(CtxSession *s);
  /* the verb's own options (NULL: none); see ctx_run_option */
  int (*option)(int argc, char **argv, int *i, CtxOptions *o);
  const char *notes; /* help text after the options (NULL: none) */
} Verb;

/* --disable / --enable, in every verb that compiles (names: ra_opt_lookup). */
#define OPT_OPTIONS                                                                \
  "  -s FILE            apply the target's schedule in FILE (a .sched file)\n"     \
  "                     instead of the default one (also --schedule FILE)\n"       \
  "  --target cpu|cuda  compile for this CPU (default) or NVIDIA GPUs (PTX)\n"     \
  "  --gpu-arch ARCH    sm_80, sm_86, sm_89 or sm_90 (default) for --target cuda\n" \
  "  --on-cpu           --target cuda's scheduled kernel on the CPU backend (bound\n" \
  "                     loops as ordinary loops, block barriers as nothing)\n"     \
  "  --l2 SIZE          the L2 cache per core the cpu kernel is for (bytes, or\n"   \
  "                     with K or M: 2M; default: this host's): levels whose\n"    \
  "                     weights fill or exceed it get wide register tiles\n"       \
  "  --disable=OPT,...  turn optimizations off: concat-split, product-ops,\n"      \
  "                     interchange, specialize-leaf, register-tile,\n"            \
  "                     vector-math, cse, hoist-products, dense-scratch,\n"        \
  "                     hoist-invariant, fuse-epilogue, all-deps, share-weights,\n" \
  "                     hoist-local, direct-results, leaf-views,\n"             \
  "                     balance-levels, grid-fusion (the last for cuda;\n"      \
  "                     for testing; all are on by\n"                           \
  "                     default)\n"                                               \
  "  --enable=OPT,...   turn optimizations back on (after --disable)\n"

static const char common_options[] =
    "  --dump=STAGE       print a stage's output: tokens, ast, ra, ilir, llvm (the\n"
    "                     optimized LLVM IR of the kernel), schedule (the cpu\n"
    "                     schedule applied, as a .sched file that -s takes back)\n"
    "  --emit=asm         print the kernel's assembly for this CPU\n"
    "  --emit=ptx         print the kernel's PTX (--target cuda)\n"
    "  --cpu CPU          the CPU --emit=asm and --dump=llvm compile for, as in\n"
    "                     ctx build: native (default), x86-64-v3 (AVX2, FMA),\n"
    "                     x86-64-v4 (AVX-512) or generic\n"
    "  --error-limit=N    stop after N errors (default 20, 0 = no limit)\n"
    "  -D NAME=VALUE      override dim NAME (also -DNAME=VALUE)\n"
    OPT_OPTIONS
    "  --syntax-only      parse only; do not check names, shapes and recursion\n"
    "  -h, --help         show this help\n";

static const char fmt_options[] =
    "  --error-limit=N    stop after N errors (default 20, 0 = no limit)\n"
    "  -h, --help         show this help\n";

/* ctx run; every flag is an interface (docs/formats.md, driver_run.c). */
static const char run_options[] =
    "  --interp           run the float64 reference interpreter instead of the\n"
    "                     compiled kernel (float32, JIT-compiled for this CPU)\n"
    "  --input FILE       the input structures (without --input and --gen: a bundled\n"
    "                     sample that fits the model, see below)\n"
    "  --format ptb|nodes|conllu  the input's format; default from its extension:\n"
    "                     .ptb, .txt, .trees -> ptb (bracketed trees), .nodes ->\n"
    "                     nodes, .conllu -> conllu (dependency trees)\n"
    "  --vocab FILE       map the words of bracketed trees and CoNLL-U to ids (one\n"
    "                     word a line; without it words must be integer ids)\n"
    "  --conllu-column C  the CoNLL-U column holding the word: FORM (default),\n"
    "                     LEMMA, UPOS or XPOS\n"
    "  --unk WORD         words not in the --vocab file take WORD's id (e.g. <unk>)\n"
    "                     instead of being an error\n"
    "  --gen SPEC         generate the input instead, e.g. binary:leaves=20,count=10\n"
    "                     (shapes binary, complete, nary, chain, grid, sequence; keys\n"
    "                     count, seed, vocab, features, values; docs/formats.md);\n"
    "                     vocab and features default to what the model reads\n"
    "  --weights FILE     safetensors named like the model's params, as ctx params\n"
    "                     lists them (F32; F64, F16, BF16 converted) (default:\n"
    "                     seeded, uniform in [-0.1, 0.1])\n"
    "  --seed N           the seed of the default weights (default 0)\n"
    "  --output OUT.npy   write the outputs as .npy [rows, ...] (float32; float64\n"
    "                     with --interp) instead of printing a summary\n"
    "  (every run ends with a line saying what ran:\n"
    "   ran: engine=jit|interpreter threads=N weights=FILE|seed:N\n"
    "        schedule=default|FILE output=OUT.npy|summary;\n"
    "   a run of many batches shows its progress on stderr when that is a terminal)\n"
    "  --all-nodes        output every node (input order), not only the roots\n"
    "  --batch B          run the input in batches of B structures (default: the\n"
    "                     whole input as one batch)\n"
    "  --repeat R         run every batch R times (for timing; the outputs are the\n"
    "                     last run's)\n"
    "  --time             after the largest batch and one pass untimed, end with\n"
    "                     the latency per batch (linearization included) and the\n"
    "                     throughput:\n"
    "                     time: median_ms=.. p10_ms=.. p90_ms=.. batches=.. batch_size=..\n"
    "                     throughput: structures_per_s=.. nodes_per_s=.. gflop_per_s=..\n"
    "                     flop_per_pass=.. (FLOPs counted on the model's operations:\n"
    "                     a multiply-add is two)\n";

/* What follows ctx run's options in its help (a string of its own: one
 * literal stays under the 4095 characters C99 promises). */
static const char run_notes[] =
    "  --threads N        threads the kernel runs on (default: one per CPU it may run\n"
    "                     on, as taskset allows; more than the cores online is\n"
    "                     allowed, with a warning)\n"
    "  --device N         the GPU --target cuda runs on, numbered as the CUDA driver\n"
    "                     lists them (default: the environment's CTXRT_CUDA_DEVICE,\n"
    "                     else 0)\n"
    "  --profile          after the largest batch and one pass untimed, end with\n"
    "                     where the time went:\n"
    "                     linearization, each level loop and each node loop of the\n"
    "                     kernel (ms per run, share, MFLOP, GFLOP/s, weight MB),\n"
    "                     over each batch's faster half of its runs (of several\n"
    "                     batches, --repeat 2 unless given)\n"
    "  --perf-map         name the JIT-compiled functions in /tmp/perf-PID.map, so\n"
    "                     that perf report shows them (README, \"Profiling\")\n"
    "  --perf-jitdump     write LLVM's jitdump of the JIT-compiled code (for perf\n"
    "                     record -k 1 and perf inject --jit: perf annotate)\n"
    "  --no-cache         compile the kernel even when the kernel cache holds it\n"
    "                     (the cache: $CTX_CACHE_DIR, default ~/.cache/ctx/kernels;\n"
    "                     CTX_CACHE_DIR=off turns it off)\n"
    "  -D NAME=VALUE      override dim NAME (also -DNAME=VALUE)\n"
    OPT_OPTIONS
    "  --error-limit=N    stop after N errors (default 20, 0 = no limit)\n"
    "  -h, --help         show this help\n"
    "\n"
    "bundled samples (no --input, no --gen), looked up in DIR/data/ where DIR holds\n"
    "the model, then in the source tree's examples/data/:\n"
    "  binary trees, a word at each leaf      sst_sample.ptb\n"
    "  n-ary trees (up to 3 children), words  tree_sample.nodes\n"
    "  sequences of words                     seq_sample.nodes\n"
    "  anything else (DAGs, features, V < 20000, ...) gets 3 generated structures\n"
    "  with the model's vocab and features: grid:rows=3,cols=4 (DAGs),\n"
    "  binary:leaves=6, chain:nodes=5 or nary:nodes=10 (trees), sequence:length=8\n"
    "\n"
    "exit codes: 0 ok, 1 errors in the model, 2 bad command line,\n"
    "            3 bad input or weights, 70 internal compiler error\n";

/* ctx params; driver_params.c. */
static const char params_options[] =
    "  --json             print JSON instead: {\"model\", \"dims\": {NAME: VALUE},\n"
    "                     \"params\": [{\"name\", \"shape\", \"type\"}]}\n"
    "  --template FILE    write the default weights (seeded, uniform in [-0.1, 0.1];\n"
    "                     what ctx run uses without --weights) as a safetensors file\n"
    "  --seed N           the seed of --template (default 0)\n"
    "  -D NAME=VALUE      override dim NAME (also -DNAME=VALUE)\n"
    "  --error-limit=N    stop after N errors (default 20, 0 = no limit)\n"
    "  -h, --help         show this help\n"
    "\n"
    "Lists every parameter: its name, its shape with the dims resolved, and its type\n"
    "as the model declares it; a weights file (ctx run --weights) holds one F32\n"
    "tensor of that name and shape for each. docs/pytorch.md shows how to make one\n"
    "from a PyTorch model.\n";

/* ctx build; driver_build.c. */
static const char build_options[] =
    "  -o, --output DIR   the output directory (made when missing): libNAME.so,\n"
    "                     libNAME.a, NAME.h (the API; NAME is the model's name),\n"
    "                     and the intermediate NAME_kernel.o (and NAME_kernel_part.o,\n"
    "                     the part compiled on a second CPU), NAME_model.c/.o\n"
    "  --name NAME        the library's name and symbol prefix (default: the\n"
    "                     model's); builds of one model with other dims and names\n"
    "                     link into one program\n"
    "  --cpu CPU          the CPU the kernel is compiled for: native (default: this\n"
    "                     machine's), x86-64-v3 (AVX2, FMA), x86-64-v4 (AVX-512) or\n"
    "                     generic (any x86-64), for libraries run elsewhere\n"
    "  -v, --verbose      print the runtime it links (libctxrt.a, ctxrt.h) and\n"
    "                     every command it runs\n"
    "  -D NAME=VALUE      override dim NAME (also -DNAME=VALUE)\n"
    OPT_OPTIONS
    "  --error-limit=N    stop after N errors (default 20, 0 = no limit)\n"
    "  -h, --help         show this help\n"
    "\n"
    "The runtime linked is $CTX_HOME's (a prefix) when set, else the one\n"
    "installed with ctx (PREFIX/lib, PREFIX/include next to PREFIX/bin/ctx), else\n"
    "the build tree's when this is the build tree's ctx (ctx --version says which).\n"
    "By default the kernel is compiled for this CPU (its name and features, O3,\n"
    "PIC) as ctx run's JIT does; with --target cuda the library embeds the\n"
    "kernel's PTX and runs it through the CUDA driver (docs/cuda.md). The C\n"
    "compiler is $CC (default cc); ar must be on PATH.\n"
    "Link a program with -lNAME, or with libNAME.a -ljansson -lm.\n"
    "\n"
    "exit codes: 0 ok, 1 errors in the model, 2 bad command line or output\n"
    "            directory, 70 internal error (LLVM, the C compiler or ar failed,\n"
    "            or no runtime found)\n";

/* ctx tune; driver_tune.c, docs/tune.md. */
static const char tune_options[] =
    "  --input FILE       the sample the candidates run on (or --gen SPEC; --format,\n"
    "                     --vocab, --conllu-column, --unk as for ctx run)\n"
    "  --weights FILE     the weights (default: seeded, --seed N)\n"
    "  --batch B          structures per batch, as the schedule will run (default:\n"
    "                     the whole sample as one batch)\n"
    "  --threads N        threads (default: every core)\n"
    "  --budget SECONDS   how long to search (default 60)\n"
    "  --search-seed N    the seed of the search's random moves (default 0)\n"
    "  -o FILE.sched      where to write the schedule found\n"
    "  -D NAME=VALUE      override dim NAME (also -DNAME=VALUE)\n"
    OPT_OPTIONS
    "  -h, --help         show this help\n";

static const char tune_notes[] =
    "\n"
    "Each candidate schedule runs as ctx run -s CAND.sched --time on the sample;\n"
    "its outputs must match the interpreter's (1e-4 + 1e-4 |x|) before it may\n"
    "win. The search: the default schedule, coordinate descent over the tile's\n"
    "shape and each pass, then seeded random moves while the budget lasts; the\n"
    "winner and the default then run in alternation and the winner is written\n"
    "only when still faster. Progress on stderr. Apply the result with\n"
    "ctx run/build -s FILE.sched.\n";

/* ctx repl; repl_main.c, docs/repl.md. */
static const char repl_options[] =
    "  --weights FILE     F32 safetensors named like the model's params (default:\n"
    "                     seeded; :weights and :seed change them)\n"
    "  --seed N           the seed of the default weights (default 0)\n"
    "  --threads N        threads the kernel runs on (default: every core)\n"
    "  -D NAME=VALUE      override dim NAME (also -DNAME=VALUE; :set NAME=VALUE)\n"
    OPT_OPTIONS
    "  -h, --help         show this help\n"
    "\n"
    "Type model items, `let x = EXPR`, expressions and :commands (:help lists them).\n"
    "On a terminal: line editing and history (~/.ctx_history), Tab completes.\n"
    "Otherwise no prompt and one result per input item: ctx repl < session.txt.\n";

static int run_check(CtxSession *s) { return ctx_pipeline_check(s); }

/* ctx check --cpu CPU / --cpu=CPU: the kernel ctx build --cpu would make. */
static int check_option(int argc, char **argv, int *i, CtxOptions *o) {
  static const char usage[] = "ctx check [options] FILE...";
  int taken = ctx_value_option("check", usage, "--cpu", argc, argv, i, &o->build.cpu);
  if (taken != CTX_OPT_TAKEN) return taken;
#ifdef CTX_HAVE_JIT
  if (cg_cpu_valid(o->build.cpu)) return CTX_OPT_TAKEN;
  ctx_usage_error("check", usage, "--cpu '%s': " CTX_CPU_CHOICES, o->build.cpu);
#else
  ctx_usage_error("check", usage, "--cpu needs ctx built with LLVM%s", "");
#endif
  return CTX_OPT_BAD;
}

static int run_fmt(CtxSession *s) {
  s->opts.dump = DUMP_AST;
  return ctx_pipeline_check(s);
}

static const Verb verbs[] = {
    {"check", "parse and check model (.ctx) and schedule (.sched) files",
     "ctx check [options] FILE...", common_options, run_check, check_option, NULL},
    {"fmt", "print files in canonical form (what --dump=ast shows)",
     "ctx fmt [options] FILE...", fmt_options, run_fmt, NULL, NULL},
    {"run", "run a model (.ctx) on input structures",
     CTX_RUN_USAGE, run_options,
     ctx_run, ctx_run_option, run_notes},
    {"params", "list a model's parameters and their shapes, or write a weights template",
     CTX_PARAMS_USAGE, params_options, ctx_params, ctx_params_option, NULL},
    {"repl", "an interactive session: load, edit and JIT-run a model, evaluate expressions",
     CTX_REPL_USAGE, repl_options, ctx_repl, ctx_repl_option, NULL},
#ifdef CTX_HAVE_JIT
    {"build", "compile a model ahead of time into a C library (.so, .a, header)",
     CTX_BUILD_USAGE, build_options, ctx_build, ctx_build_option, NULL},
    {"tune", "search a model's cpu schedule by compiling and timing candidates on a sample",
     CTX_TUNE_USAGE, tune_options, ctx_tune, ctx_tune_option, tune_notes},
#endif
};
enum { NUM_VERBS = sizeof verbs / sizeof verbs[0] };

static void print_main_help(FILE *f) {
  fputs("ctx — a compiler for recursive deep-learning models\n\n"
        "usage: ctx <verb> [options] FILE...\n\nverbs:\n", f);
  for (int i = 0; i < NUM_VERBS; i++) fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
  fputs("\noptions:\n  -h, --help      show this help (ctx <verb> --help: the verb's)\n"
        "  --version       print the version\n\n"
        "exit codes: 0 ok, 1 errors in the input, 2 bad command line,\n"
        "            3 bad runtime data, 70 internal compiler error\n", f);
}

static void print_verb_help(FILE *f, const Verb *v) {
  fprintf(f, "ctx %s — %s\n\nusage: %s\n\noptions:\n%s%s", v->name, v->summary, v->usage,
          v->options, v->notes ? v->notes : "");
}

static int usage_error(const Verb *v, const char *fmt, const char *arg) {
  return ctx_usage_error(v ? v->name : NULL, v ? v->usage : NULL, fmt, arg);
}

/* The value of option [name] at argv[*i]: `--name=V` or `--name V`. NULL if
 * argv[*i] is not that option; [*missing] when the value is absent. */
static const char *option_value(int argc, char **argv, int *i, const char *name,
                                bool *missing) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != 0) return NULL;
  if (*i + 1 >= argc) {
    *missing = true;
    return "";
  }
  return argv[++*i];
}

/* --disable=a,b (--enable=a,b when [on]): every name must be an optimization
 * (ra_opt_lookup). */
static bool parse_opts(CtxOptions *o, const char *list, bool on) {
  char name[64];
  while (*list) {
    size_t n = strcspn(list, ",");
    if (n == 0 || n >= sizeof name) return false;
    memcpy(name, list, n);
    name[n] = 0;
    unsigned bit = ra_opt_lookup(name, NULL);
    if (!bit) return false;
    o->disabled = on ? o->disabled & ~bit : o->disabled | bit;
    list += n + (list[n] == ',');
  }
  return true;
}

static bool parse_int(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == 0 || *end != 0 || v < 0 || v > 1000000) return false;
  *out = (int)v;
  return true;
}

/* --l2's SIZE: bytes, or a number with K or M (KiB, MiB), from 1K to 1G. */
static bool parse_size(const char *s, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : 0;
  if (shift) end++;
  if (*s < '0' || *s > '9' || *end || v <= 0 || v > (1L << 30) >> shift) return false;
  v <<= shift;
  if (v < 1024) return false;
  *out = v;
  return true;
}

static int parse_dump(const Verb *v, CtxOptions *o, const char *val) {
  if (strcmp(val, "tokens") == 0) o->dump = DUMP_TOKENS;
  else if (strcmp(val, "ast") == 0) o->dump = DUMP_AST;
  else if (strcmp(val, "ra") == 0) o->dump = DUMP_RA;
  else if (strcmp(val, "ilir") == 0) o->dump = DUMP_ILIR;
  else if (strcmp(val, "llvm") == 0) o->dump = DUMP_LLVM;
  else if (strcmp(val, "schedule") == 0) o->dump = DUMP_SCHEDULE;
  else return usage_error(v, "unknown stage '%s' for --dump (stages: tokens, ast, ra, ilir, "
                          "llvm, schedule)", val);
#ifndef CTX_HAVE_JIT
  if (o->dump == DUMP_LLVM) return usage_error(v, "--dump=%s needs ctx built with LLVM", val);
#endif
  return 0;
}

/* -D NAME=VALUE into o->defines (allocated with o->files, freed by main). */
static bool parse_define(CtxOptions *o, const char *def) {
  const char *eq = strchr(def, '=');
  char *end;
  if (!eq || eq == def) return false;
  long v = strtol(eq + 1, &end, 10);
  if (eq[1] == 0 || *end != 0 || v <= 0 || v > 1000000000L) return false;
  SemaDefine *d = &o->defines[o->ndefines++];
  size_t n = (size_t)(eq - def);
  char *name = ctx_xmalloc(n + 1);
  memcpy(name, def, n);
  name[n] = 0;
  d->name = name;
  d->value = v;
  return true;
}

/* Parses the arguments after the verb into [o]. Returns 0, or an exit code
 * (help printed: -1 meaning "exit 0"). */
static int parse_args(const Verb *v, int argc, char **argv, CtxOptions *o) {
  o->disabled = RA_OPT_DEFAULT_OFF;
  o->files = calloc((size_t)argc + 1, sizeof(char *));
  o->defines = calloc((size_t)argc + 1, sizeof(SemaDefine));
  if (!o->files || !o->defines) ctx_oom();
  bool only_files = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *val;
    bool missing = false;
    int taken = CTX_OPT_NOT_MINE;
    if (only_files || a[0] != '-' || a[1] == 0) {
      o->files[o->nfiles++] = a;
    } else if (v->option && (taken = v->option(argc, argv, &i, o)) != CTX_OPT_NOT_MINE) {
      if (taken == CTX_OPT_BAD) return CTX_EXIT_USAGE;
    } else if (strcmp(a, "--") == 0) {
      only_files = true;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      print_verb_help(stdout, v);
      return -1;
    } else if ((val = option_value(argc, argv, &i, "--dump", &missing))) {
      if (missing) return usage_error(v, "option '%s' needs a value", a);
      int rc = parse_dump(v, o, val);
      if (rc) return rc;
    } else if ((val = option_value(argc, argv, &i, "--emit", &missing))) {
      if (missing || (strcmp(val, "asm") != 0 && strcmp(val, "ptx") != 0))
        return usage_error(v, "unknown output '%s' for --emit (outputs: asm, ptx)", val);
#ifndef CTX_HAVE_JIT
      return usage_error(v, "--emit=%s needs ctx built with LLVM", val);
#endif
      o->dump = strcmp(val, "ptx") == 0 ? DUMP_PTX : DUMP_ASM;
    } else if ((val = option_value(argc, argv, &i, "--target", &missing))) {
      if (missing || (strcmp(val, "cpu") != 0 && strcmp(val, "cuda") != 0))
        return usage_error(v, "unknown target '%s' (targets: cpu, cuda)", val);
      o->target = strcmp(val, "cuda") == 0 ? CTX_TARGET_CUDA : CTX_TARGET_CPU;
    } else if ((val = option_value(argc, argv, &i, "--gpu-arch", &missing))) {
      if (missing || (strcmp(val, "sm_80") != 0 && strcmp(val, "sm_86") != 0 &&
                      strcmp(val, "sm_89") != 0 && strcmp(val, "sm_90") != 0))
        return usage_error(v, "unknown GPU architecture '%s' (sm_80, sm_86, sm_89, sm_90)", val);
      o->gpu_arch = val;
    } else if (strcmp(a, "--on-cpu") == 0) {
      o->gpu_on_cpu = true;
    } else if ((val = option_value(argc, argv, &i, "--l2", &missing))) {
      if (missing || !parse_size(val, &o->l2))
        return usage_error(v, "option '--l2' needs a size from 1K to 1G (bytes, or a number "
                              "with K or M), found '%s'", missing ? "" : val);
    } else if ((val = option_value(argc, argv, &i, "--error-limit", &missing))) {
      if (missing || !parse_int(val, &o->error_limit))
        return usage_error(v, "option '--error-limit' needs a number, found '%s'", val);
    } else if ((val = option_value(argc, argv, &i, "--schedule", &missing)) ||
               (val = option_value(argc, argv, &i, "-s", &missing))) {
      if (missing) return usage_error(v, "option '%s' needs a file", a);
      o->schedule = val;
    } else if ((val = option_value(argc, argv, &i, "--disable", &missing))) {
      if (missing || !parse_opts(o, val, false))
        return usage_error(v, "unknown optimization in '--disable=%s'", val);
    } else if ((val = option_value(argc, argv, &i, "--enable", &missing))) {
      if (missing || !parse_opts(o, val, true))
        return usage_error(v, "unknown optimization in '--enable=%s'", val);
    } else if (strcmp(a, "--syntax-only") == 0) {
      o->syntax_only = true;
    } else if (strncmp(a, "-D", 2) == 0) {
      const char *def = a[2] ? a + 2 : i + 1 < argc ? argv[++i] : "";
      if (!parse_define(o, def))
        return usage_error(v, "-D needs NAME=VALUE with a positive integer, found '%s'", def);
    } else {
      return ctx_unknown_option(v->name, v->usage, v->options, a);
    }
  }
  if (o->nfiles == 0 && v->run != ctx_repl) return usage_error(v, "no input files%s", "");
  if (o->dump == DUMP_PTX && o->target != CTX_TARGET_CUDA)
    return usage_error(v, "--emit=ptx needs --target cuda%s", "");
  if (o->dump == DUMP_SCHEDULE && o->target == CTX_TARGET_CUDA)
    return usage_error(v, "--dump=schedule prints cpu schedules; a cuda schedule is its "
                          "file (docs/cuda.md)%s", "");
  if ((o->gpu_arch || o->gpu_on_cpu) && o->target != CTX_TARGET_CUDA)
    return usage_error(v, "%s needs --target cuda", o->gpu_arch ? "--gpu-arch" : "--on-cpu");
  if (!o->gpu_arch) o->gpu_arch = "sm_90";
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage_error(NULL, "no verb given%s", "");
  const char *name = argv[1];
  if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
    print_main_help(stdout);
    return 0;
  }
  if (strcmp(name, "--version") == 0) {
    printf("ctx %s\n", CTX_VERSION);
#ifdef CTX_HAVE_JIT
    CtxRuntime rt;
    if (ctx_build_runtime(&rt))
      printf("runtime: %s and %s/ctxrt.h (%s)\n", rt.lib, rt.include, rt.from);
    else
      printf("runtime: not found (looked for %s)\n", rt.looked[0] ? rt.looked : "an install prefix");
    ctx_build_runtime_free(&rt);
#endif
    return 0;
  }
  const Verb *v = NULL;
  for (int i = 0; i < NUM_VERBS; i++)
    if (strcmp(verbs[i].name, name) == 0) v = &verbs[i];
  const char *names[NUM_VERBS];
  for (int i = 0; i < NUM_VERBS; i++) names[i] = verbs[i].name;
  if (!v) return ctx_unknown_verb(name, names, NUM_VERBS);

  CtxSession s;
  ctx_session_init(&s, stdout, stderr);
  int rc = parse_args(v, argc - 2, argv + 2, &s.opts);
  if (rc == 0) {
    s.diag.error_limit = s.opts.error_limit;
    rc = v->run(&s);
  } else if (rc < 0) {
    rc = 0;
  }
  free(s.opts.files);
  for (int i = 0; i < s.opts.ndefines; i++) free((char *)s.opts.defines[i].name);
  free(s.opts.defines);
  free(s.opts.tune.fwd);
  ctx_session_free(&s);
  return rc;
}
