/* repl_cmd.c — ctx repl's `:` commands: the table :help prints, and each
 * command's argument checks. A command's errors print a message and leave
 * the session as it was; none ends it but :quit.
 */
#include "driver/repl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  const char *name;
  const char *args; /* for :help */
  const char *help;
  void (*fn)(Repl *R, const char *arg);
  bool file; /* its argument is a file name (completion) */
} Command;

static bool parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*s == 0 || *end != 0 || errno || v < lo || v > hi) return false;
  *out = v;
  return true;
}

static bool no_arg(Repl *R, const char *cmd, const char *arg) {
  if (*arg == 0) return true;
  repl_error(R, ":%s takes no argument, found '%s'", cmd, arg);
  return false;
}

static bool need_arg(Repl *R, const char *cmd, const char *arg, const char *what) {
  if (*arg) return true;
  repl_error(R, ":%s needs %s", cmd, what);
  return false;
}

static void cmd_help(Repl *R, const char *arg);

static void cmd_load(Repl *R, const char *arg) {
  if (need_arg(R, "load", arg, "a model file")) repl_load(R, arg);
}

static void cmd_reload(Repl *R, const char *arg) {
  if (no_arg(R, "reload", arg)) repl_reload(R);
}

/* $EDITOR (default vi) on [path]; false when it could not run or failed. */
static bool run_editor(Repl *R, const char *path) {
  fflush(R->out);
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", "${EDITOR:-vi} \"$1\"", "sh", path, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    repl_error(R, "the editor failed on '%s'; the model is unchanged", path);
    return false;
  }
  return true;
}

/* The model file itself when nothing was typed on top of it; else its
 * canonical form with the typed items, in a new file that becomes the model. */
static void cmd_edit(Repl *R, const char *arg) {
  if (!no_arg(R, "edit", arg)) return;
  if (R->model_path && R->ntyped == 0) {
    if (run_editor(R, R->model_path)) repl_reload(R);
    return;
  }
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/ctx-repl-XXXXXX", dir && *dir ? dir : "/tmp");
  if (!mkdtemp(path)) {
    repl_error(R, "cannot make a directory to edit in under '%s'", dir && *dir ? dir : "/tmp");
    return;
  }
  strcat(path, "/model.ctx"); /* the .ctx suffix: editors' syntax modes */
  if (repl_write_model(R, path) && run_editor(R, path)) repl_load(R, path);
}

static void cmd_show(Repl *R, const char *arg) {
  if (no_arg(R, "show", arg)) repl_show(R);
}

static void cmd_params(Repl *R, const char *arg) {
  if (no_arg(R, "params", arg)) repl_params(R);
}

static void cmd_tree(Repl *R, const char *arg) {
  if (need_arg(R, "tree", arg, "a bracketed tree, e.g. :tree (3 (2 17) (4 5))"))
    repl_add_tree(R, arg);
}

static void cmd_nodes(Repl *R, const char *arg) {
  if (!need_arg(R, "nodes", arg, "a node list file (.nodes)")) return;
  repl_set_input(R, arg, true);
  fprintf(R->out, "input: node lists from %s\n", arg);
}

static void cmd_input(Repl *R, const char *arg) {
  if (!need_arg(R, "input", arg, "an input file")) return;
  size_t n = strlen(arg);
  bool nodes = n > 6 && strcmp(arg + n - 6, ".nodes") == 0;
  repl_set_input(R, arg, nodes);
  fprintf(R->out, "input: %s from %s\n", nodes ? "node lists" : "bracketed trees", arg);
}

static void cmd_gen(Repl *R, const char *arg) {
  if (!need_arg(R, "gen", arg, "a generator spec, e.g. binary:leaves=20,count=10")) return;
  repl_set_gen(R, arg);
  if (R->gen) fprintf(R->out, "input: generated %s\n", arg);
}

static void cmd_clear(Repl *R, const char *arg) {
  if (!no_arg(R, "clear", arg)) return;
  repl_clear_input(R);
  fputs("input cleared (a run generates three small structures)\n", R->out);
}

static void cmd_weights(Repl *R, const char *arg) {
  if (!need_arg(R, "weights", arg, "a safetensors file")) return;
  CtxrtWeights *w = NULL;
  CtxrtError err;
  if (ctxrt_st_read_file(arg, &w, &err)) { /* checked against the model when used */
    fflush(R->out);
    bool placed = strncmp(err.msg, "error: ", 7) == 0 || strstr(err.msg, ": error: ");
    fprintf(R->err, "%s%s\n", placed ? "" : "error: ", err.msg);
    return;
  }
  ctxrt_weights_destroy(w);
  repl_weights_changed(R);
  free(R->weights_path);
  R->weights_path = ctx_xmalloc(strlen(arg) + 1);
  strcpy(R->weights_path, arg);
  fprintf(R->out, "weights: %s\n", arg);
}

static void cmd_seed(Repl *R, const char *arg) {
  long v;
  if (!parse_long(arg, 0, 0x7fffffffL, &v)) {
    repl_error(R, ":seed needs a non-negative integer, found '%s'", arg);
    return;
  }
  repl_weights_changed(R);
  free(R->weights_path);
  R->weights_path = NULL;
  R->seed = (uint64_t)v;
  fprintf(R->out, "weights: seeded with %ld\n", v);
}

static void set_define(Repl *R, const char *name, long value) {
  for (int i = 0; i < R->ndefines; i++)
    if (strcmp(R->defines[i].name, name) == 0) {
      R->defines[i].value = value;
      return;
    }
  R->defines = ctx_xrealloc(R->defines, sizeof *R->defines * (size_t)(R->ndefines + 1));
  char *n = ctx_xmalloc(strlen(name) + 1);
  strcpy(n, name);
  R->defines[R->ndefines].name = n;
  R->defines[R->ndefines++].value = value;
}

static void cmd_set(Repl *R, const char *arg) {
  const char *eq = strchr(arg, '=');
  char name[128];
  long v;
  if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof name ||
      !parse_long(eq + 1, 1, 1000000000L, &v)) {
    repl_error(R, ":set needs NAME=VALUE with a positive integer, found '%s'", arg);
    return;
  }
  memcpy(name, arg, (size_t)(eq - arg));
  name[eq - arg] = 0;
  int old = -1;
  long was = 0;
  for (int i = 0; i < R->ndefines; i++)
    if (strcmp(R->defines[i].name, name) == 0) old = i, was = R->defines[i].value;
  set_define(R, name, v);
  repl_model_changed(R);
  if (R->model_text || R->ntyped ? repl_build(R, false) != NULL : true) {
    fprintf(R->out, "dim %s = %ld\n", name, v);
    return;
  }
  if (old >= 0) { /* a dim the model lacks, or a value it cannot take: as before */
    R->defines[old].value = was;
  } else {
    free((char *)R->defines[--R->ndefines].name);
  }
  repl_model_changed(R);
  fprintf(R->out, "dim %s not set\n", name);
}

static void cmd_threads(Repl *R, const char *arg) {
  long v;
  if (!parse_long(arg, 0, 1024, &v)) {
    repl_error(R, ":threads needs a number of threads (0: every core), found '%s'", arg);
    return;
  }
  R->threads = (int)v;
#ifdef CTX_HAVE_JIT
  if (R->build && R->build->model) ctxrt_model_set_threads(R->build->model, R->threads, NULL);
#endif
  fprintf(R->out, "threads: %ld%s\n", v, v ? "" : " (every core)");
}

static void cmd_schedule(Repl *R, const char *arg) {
  if (!need_arg(R, "schedule", arg, "a schedule file (.sched)")) return;
  if (access(arg, R_OK) != 0) {
    repl_error(R, "cannot read '%s': %s", arg, strerror(errno));
    return;
  }
  free(R->sched_path);
  R->sched_path = ctx_xmalloc(strlen(arg) + 1);
  strcpy(R->sched_path, arg);
  repl_model_changed(R);
  fprintf(R->out, "schedule: %s (at the next run)\n", arg);
}

/* --all-nodes or nothing. */
static bool all_nodes_arg(Repl *R, const char *cmd, const char *arg, bool *all) {
  *all = strcmp(arg, "--all-nodes") == 0;
  if (*all || *arg == 0) return true;
  repl_error(R, ":%s takes --all-nodes or nothing, found '%s'", cmd, arg);
  return false;
}

static void cmd_run(Repl *R, const char *arg) {
  bool all;
  if (all_nodes_arg(R, "run", arg, &all)) repl_cmd_run(R, all);
}

static void cmd_interp(Repl *R, const char *arg) {
  bool all;
  if (all_nodes_arg(R, "interp", arg, &all)) repl_cmd_interp(R, all);
}

static void cmd_save(Repl *R, const char *arg) {
  if (need_arg(R, "save", arg, "an output file (.npy)")) repl_cmd_save(R, arg);
}

static void cmd_time(Repl *R, const char *arg) {
  long reps = 0;
  if (*arg && !parse_long(arg, 1, 100000000L, &reps)) {
    repl_error(R, ":time needs a positive number of runs, found '%s'", arg);
    return;
  }
  repl_cmd_time(R, reps);
}

static void cmd_dump(Repl *R, const char *arg) {
  if (need_arg(R, "dump", arg, "a stage: tokens, ast, ra, ilir, llvm, asm")) repl_dump(R, arg);
}

static void cmd_quit(Repl *R, const char *arg) {
  if (no_arg(R, "quit", arg)) R->quit = true;
}

static const Command commands[] = {
    {"help", "", "list the commands", cmd_help, false},
    {"load", "FILE", "load a model file (replaces the model)", cmd_load, true},
    {"reload", "", "read the model file again (after editing it elsewhere)", cmd_reload, false},
    {"edit", "", "open $EDITOR on the model, reload on exit", cmd_edit, false},
    {"show", "", "print the model in canonical form (as ctx fmt)", cmd_show, false},
    {"params", "", "the dims, params (shapes resolved) and variables", cmd_params, false},
    {"tree", "TREE", "add a bracketed tree to the input: :tree (3 (2 17) (4 5))", cmd_tree,
     false},
    {"nodes", "FILE", "read the input from a node list file", cmd_nodes, true},
    {"input", "FILE", "read the input from a file (.ptb, .txt, .trees, .nodes)", cmd_input,
     true},
    {"gen", "SPEC", "generate the input, as --gen (binary:leaves=20,count=10)", cmd_gen, false},
    {"clear", "", "forget the input", cmd_clear, false},
    {"weights", "FILE", "read the weights from a safetensors file", cmd_weights, true},
    {"seed", "N", "seeded weights (the default, seed 0)", cmd_seed, false},
    {"set", "NAME=VALUE", "override a dim, as -D", cmd_set, false},
    {"threads", "N", "threads the kernel runs on (0: every core)", cmd_threads, false},
    {"schedule", "FILE", "apply the cpu schedule in FILE (or type a schedule block)",
     cmd_schedule, true},
    {"run", "[--all-nodes]", "JIT-compile if something changed, run, print a summary",
     cmd_run, false},
    {"interp", "[--all-nodes]", "run on the float64 interpreter; the difference to the JIT",
     cmd_interp, false},
    {"save", "OUT.npy", "write the last run's output rows as .npy", cmd_save, true},
    {"time", "[R]", "latency of the current input over R runs (default 100)", cmd_time, false},
    {"dump", "STAGE", "print tokens, ast, ra, ilir, llvm or asm", cmd_dump, false},
    {"quit", "", "leave (also Ctrl-D)", cmd_quit, false},
};
enum { NUM_COMMANDS = sizeof commands / sizeof commands[0] };

static void cmd_help(Repl *R, const char *arg) {
  if (!no_arg(R, "help", arg)) return;
  for (int i = 0; i < NUM_COMMANDS; i++) {
    char head[40];
    snprintf(head, sizeof head, ":%s %s", commands[i].name, commands[i].args);
    fprintf(R->out, "  %-22s %s\n", head, commands[i].help);
  }
  fputs("  items (model, dim, input, param, rec, def, output, use, schedule) define or\n"
        "  redefine the model; `let x = EXPR` and expressions are compiled and evaluated\n",
        R->out);
}

void repl_command(Repl *R, const char *line) {
  size_t n = strcspn(line, " \t");
  const char *arg = line + n;
  while (*arg == ' ' || *arg == '\t') arg++;
  size_t len = strlen(arg);
  char *buf = ctx_xmalloc(len + 1);
  memcpy(buf, arg, len + 1);
  while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\n'))
    buf[--len] = 0;
  for (int i = 0; i < NUM_COMMANDS; i++)
    if (strlen(commands[i].name) == n && strncmp(commands[i].name, line, n) == 0) {
      commands[i].fn(R, buf);
      free(buf);
      return;
    }
  free(buf);
  const char *guess = NULL;
  int best = 3;
  char cmd[64];
  snprintf(cmd, sizeof cmd, "%.*s", (int)(n < 63 ? n : 63), line);
  for (int i = 0; i < NUM_COMMANDS; i++) {
    int d = ctx_edit_distance(cmd, commands[i].name, 2);
    if (d < best) best = d, guess = commands[i].name;
  }
  if (guess) repl_error(R, "unknown command ':%s'; did you mean ':%s'? (:help lists them)", cmd,
                        guess);
  else repl_error(R, "unknown command ':%s' (:help lists them)", cmd);
}

const char *repl_command_name(int i) { return i < NUM_COMMANDS ? commands[i].name : NULL; }

bool repl_command_takes_file(const char *name) {
  for (int i = 0; i < NUM_COMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0) return commands[i].file;
  return false;
}
