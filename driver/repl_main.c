/* repl_main.c — `ctx repl [MODEL.ctx] [-s FILE.sched] [-D NAME=VALUE]...
 * [--weights W] [--threads N]`: the loop.
 *
 *   a line (libedit on a terminal: history in ~/.ctx_history, completion of
 *   commands, file names and the model's names; else plain reads, no prompt)
 *   --while brackets are open, more lines--> one input, numbered N
 *   --dispatch--> a `:` command (repl_cmd.c) | items (repl_model.c) |
 *   a `let` or an expression (repl_expr.c)
 *
 * Nothing ends the session but :quit or the end of input (Ctrl-D): every
 * error is printed and the next input read; the exit status is 0. Ctrl-C at
 * the prompt drops the line; in a long :time it stops the runs (they poll
 * ctx_repl_interrupted between runs). stdout is line-buffered so that results
 * and diagnostics (stderr) interleave in order in a piped transcript.
 */
#include "driver/repl.h"

#include <ctype.h>
#include <dirent.h>
#include <histedit.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The one piece of global state: what a signal handler may touch. */
volatile sig_atomic_t ctx_repl_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  ctx_repl_interrupted = 1;
}

typedef struct {
  Repl *R;
  EditLine *el;
  History *hist;
  bool continuing; /* inside open brackets: the continuation prompt */
} ReplLoop;

/* ---- options --------------------------------------------------------------------- */

int ctx_repl_option(int argc, char **argv, int *i, CtxOptions *o) {
  static const char *const mine[] = {"--weights", "--threads", "--seed"};
  for (size_t k = 0; k < sizeof mine / sizeof mine[0]; k++) {
    size_t n = strlen(mine[k]);
    if (strncmp(argv[*i], mine[k], n) == 0 && (argv[*i][n] == 0 || argv[*i][n] == '='))
      return ctx_run_option(argc, argv, i, o);
  }
  return CTX_OPT_NOT_MINE;
}

/* ---- input ------------------------------------------------------------------------ */

/* Open brackets in [s] (strings and comments skipped). */
static int open_brackets(const char *s) {
  int depth = 0;
  for (; *s; s++) {
    if (*s == '#' || (s[0] == '/' && s[1] == '/')) {
      while (*s && *s != '\n') s++;
      if (!*s) break;
    } else if (*s == '"') {
      for (s++; *s && *s != '"' && *s != '\n'; s++)
        if (*s == '\\' && s[1]) s++;
      if (!*s) break;
    } else if (strchr("([{", *s)) {
      depth++;
    } else if (strchr(")]}", *s)) {
      depth--;
    }
  }
  return depth;
}

static const char *const item_words[] = {"model", "dim", "input", "param", "rec",
                                         "def", "output", "use", "schedule"};

static bool starts_item(const char *s) {
  size_t n = 0;
  while (isalnum((unsigned char)s[n]) || s[n] == '_') n++;
  for (size_t k = 0; k < sizeof item_words / sizeof item_words[0]; k++)
    if (strlen(item_words[k]) == n && strncmp(item_words[k], s, n) == 0) return true;
  return false;
}

/* Is [s] blank or only comments? */
static bool blank(const char *s) {
  for (; *s; s++) {
    if (*s == '#' || (s[0] == '/' && s[1] == '/')) {
      while (*s && *s != '\n') s++;
      if (!*s) return true;
    } else if (!isspace((unsigned char)*s)) {
      return false;
    }
  }
  return true;
}

static void dispatch(Repl *R, char *text) {
  size_t len = strlen(text);
  while (len && isspace((unsigned char)text[len - 1])) text[--len] = 0;
  const char *s = text;
  while (isspace((unsigned char)*s)) s++;
  if (blank(s)) return;
  R->input_no++;
  ctx_repl_interrupted = 0;
  if (*s == ':') repl_command(R, s + 1);
  else if (starts_item(s)) repl_add_items(R, text);
  else repl_eval(R, text);
  ctx_repl_interrupted = 0; /* a Ctrl-C that stopped the command is spent */
  fflush(R->out);
}

/* ---- completion ------------------------------------------------------------------- */

static const char *const builtin_names[] = {"sigmoid", "tanh", "relu", "exp", "log",
                                            "sqrt", "abs", "concat", "sum", "max", "let"};

/* Appends the names in directory of [word] that start with its base name,
 * "dir/name" with '/' after directories. */
static void file_candidates(CtxArena *a, const char *word, CtxVec *out) {
  const char *slash = strrchr(word, '/');
  char *dir = slash ? ctx_arena_strndup(a, word, (size_t)(slash - word + 1)) : "";
  const char *base = slash ? slash + 1 : word;
  DIR *d = opendir(*dir ? dir : ".");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (e->d_name[0] == '.' && base[0] != '.') continue;
    if (strncmp(e->d_name, base, strlen(base)) != 0) continue;
    char *path = ctx_arena_printf(a, "%s%s", dir, e->d_name);
    struct stat st;
    bool is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    ctx_vec_push(a, out, is_dir ? ctx_arena_printf(a, "%s/", path) : path);
  }
  closedir(d);
}

/* The candidates for the word [word] of [line] (the word starts at [at]). */
static void candidates(Repl *R, CtxArena *a, const char *line, size_t at, const char *word,
                       CtxVec *out) {
  size_t lead = strspn(line, " \t");
  if (line[lead] == ':' && at == lead) {
    for (int i = 0; repl_command_name(i); i++)
      ctx_vec_push(a, out, ctx_arena_printf(a, ":%s ", repl_command_name(i)));
    return;
  }
  if (line[lead] == ':') {
    size_t n = strcspn(line + lead + 1, " \t");
    char *cmd = ctx_arena_strndup(a, line + lead + 1, n);
    if (repl_command_takes_file(cmd)) file_candidates(a, word, out);
    return;
  }
  repl_model_names(R, out, a);
  for (size_t k = 0; k < sizeof builtin_names / sizeof builtin_names[0]; k++)
    ctx_vec_push(a, out, (void *)builtin_names[k]);
  for (size_t k = 0; at == lead && k < sizeof item_words / sizeof item_words[0]; k++)
    ctx_vec_push(a, out, ctx_arena_printf(a, "%s ", item_words[k]));
}

/* Tab: the one match completed, else the longest common prefix, else the
 * matches listed. */
static unsigned char complete(EditLine *el, int ch) {
  (void)ch;
  ReplLoop *L;
  el_get(el, EL_CLIENTDATA, &L);
  const LineInfo *li = el_line(el);
  const char *start = li->cursor;
  while (start > li->buffer && !strchr(" \t()[],;=+-*@", start[-1])) start--;
  CtxArena *a = ctx_arena_new();
  char *line = ctx_arena_strndup(a, li->buffer, (size_t)(li->lastchar - li->buffer));
  char *word = ctx_arena_strndup(a, start, (size_t)(li->cursor - start));
  size_t wlen = strlen(word);
  CtxVec all = {0}, hits = {0};
  candidates(L->R, a, line, (size_t)(start - li->buffer), word, &all);
  for (int i = 0; i < all.len; i++) {
    const char *c = all.items[i];
    bool dup = false;
    for (int k = 0; k < hits.len && !dup; k++) dup = strcmp(hits.items[k], c) == 0;
    if (!dup && strncmp(c, word, wlen) == 0) ctx_vec_push(a, &hits, (void *)c);
  }
  unsigned char rc = CC_REFRESH;
  if (hits.len == 0) {
    rc = CC_ERROR;
  } else {
    size_t common = strlen(hits.items[0]);
    for (int i = 1; i < hits.len; i++) {
      size_t k = 0;
      const char *x = hits.items[0], *y = hits.items[i];
      while (k < common && x[k] == y[k]) k++;
      common = k;
    }
    if (common > wlen) {
      el_insertstr(el, ctx_arena_strndup(a, (const char *)hits.items[0] + wlen, common - wlen));
    } else if (hits.len > 1) {
      fputc('\n', stdout);
      for (int i = 0; i < hits.len; i++) fprintf(stdout, "%s  ", (const char *)hits.items[i]);
      fputc('\n', stdout);
      rc = CC_REDISPLAY;
    }
  }
  ctx_arena_free(a);
  return rc;
}

/* ---- the terminal -------------------------------------------------------------------- */

static char *prompt(EditLine *el) {
  ReplLoop *L;
  el_get(el, EL_CLIENTDATA, &L);
  return L->continuing ? "...> " : "ctx> ";
}

static void open_terminal(ReplLoop *L) {
  Repl *R = L->R;
  L->el = el_init("ctx", stdin, stdout, stderr);
  el_set(L->el, EL_CLIENTDATA, L);
  el_set(L->el, EL_PROMPT, prompt);
  el_set(L->el, EL_EDITOR, "emacs");
  el_set(L->el, EL_SIGNAL, 1);
  L->hist = history_init();
  HistEvent ev;
  history(L->hist, &ev, H_SETSIZE, 1000);
  history(L->hist, &ev, H_SETUNIQUE, 1);
  const char *home = getenv("HOME");
  if (home && *home) {
    R->history_path = ctx_xmalloc(strlen(home) + 32);
    sprintf(R->history_path, "%s/.ctx_history", home);
    history(L->hist, &ev, H_LOAD, R->history_path);
  }
  el_set(L->el, EL_HIST, history, L->hist);
  el_set(L->el, EL_ADDFN, "ctx-complete", "complete a command, file or name", complete);
  el_set(L->el, EL_BIND, "^I", "ctx-complete", NULL);
  el_source(L->el, NULL); /* ~/.editrc: `bind -v` for vi keys */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: a read at the prompt returns */
}

static void close_terminal(ReplLoop *L) {
  if (L->hist) history_end(L->hist);
  if (L->el) el_end(L->el);
}

static void remember(ReplLoop *L, const char *text) {
  if (!L->hist || blank(text)) return;
  HistEvent ev;
  history(L->hist, &ev, H_ENTER, text);
  if (L->R->history_path) history(L->hist, &ev, H_SAVE, L->R->history_path);
}

/* The next line (with its newline, when it had one) into [line]: false at the
 * end of input. On a terminal, Ctrl-C drops what was typed so far. */
static bool next_line(ReplLoop *L, CtxBuf *input, char **buf, size_t *cap) {
  for (;;) {
    if (!L->el) {
      ssize_t n = getline(buf, cap, stdin);
      if (n < 0) return false;
      ctx_buf_write(input, *buf, (size_t)n);
      return true;
    }
    int count = 0;
    const char *line = el_gets(L->el, &count);
    if (line && count > 0) {
      ctx_buf_write(input, line, (size_t)count);
      return true;
    }
    if (!ctx_repl_interrupted) return false; /* Ctrl-D */
    ctx_repl_interrupted = 0;
    fputc('\n', stdout);
    ctx_buf_clear(input);
    L->continuing = false;
  }
}

static void repl_free(Repl *R) {
  repl_model_free(R);
  repl_run_free(R);
  repl_vars_free(R);
  for (int i = 0; i < R->ndefines; i++) free((char *)R->defines[i].name);
  free(R->defines);
  free(R->sched_path);
  free(R->weights_path);
  free(R->history_path);
}

static void loop(ReplLoop *L) {
  CtxBuf input;
  ctx_buf_init(&input);
  char *buf = NULL;
  size_t cap = 0;
  while (!L->R->quit) {
    bool more = next_line(L, &input, &buf, &cap);
    if (more && open_brackets(ctx_buf_str(&input)) > 0) {
      L->continuing = true;
      continue;
    }
    L->continuing = false;
    if (!more && input.len == 0) break;
    char *text = ctx_xmalloc(input.len + 1);
    memcpy(text, ctx_buf_str(&input), input.len + 1);
    ctx_buf_clear(&input);
    remember(L, text);
    dispatch(L->R, text);
    free(text);
    if (!more) break;
  }
  if (L->el && !L->R->quit) fputc('\n', stdout);
  free(buf);
  ctx_buf_free(&input);
}

int ctx_repl(CtxSession *s) {
  CtxOptions *o = &s->opts;
  if (o->nfiles > 1)
    return ctx_usage_error("repl", CTX_REPL_USAGE, "ctx repl takes one model file, found %s",
                           o->files[1]);
  if (o->dump != DUMP_NONE || o->syntax_only)
    return ctx_usage_error("repl", CTX_REPL_USAGE, "%s",
                           "--dump, --emit and --syntax-only do not apply to 'ctx repl' (use "
                           ":dump STAGE)");
  setvbuf(stdout, NULL, _IOLBF, 0);
  Repl R;
  memset(&R, 0, sizeof R);
  R.out = stdout;
  R.err = stderr;
  R.tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  R.opts = *o;
  const char *jit = getenv("CTX_REPL_JIT");
  R.full_jit = jit && strcmp(jit, "full") == 0;
  if (!R.full_jit) R.opts.disabled |= RA_OPT_REGISTER_TILE; /* see repl_jit_options */
  R.opts.files = NULL;
  R.opts.nfiles = 0;
  R.seed = o->run.seed;
  R.threads = (int)o->run.threads;
  ctx_buf_init(&R.trees);
  for (int i = 0; i < o->ndefines; i++) {
    R.defines = ctx_xrealloc(R.defines, sizeof *R.defines * (size_t)(R.ndefines + 1));
    char *n = ctx_xmalloc(strlen(o->defines[i].name) + 1);
    strcpy(n, o->defines[i].name);
    R.defines[R.ndefines].name = n;
    R.defines[R.ndefines++].value = o->defines[i].value;
  }
  if (o->schedule) {
    R.sched_path = ctx_xmalloc(strlen(o->schedule) + 1);
    strcpy(R.sched_path, o->schedule);
  }
  if (o->run.weights) {
    R.weights_path = ctx_xmalloc(strlen(o->run.weights) + 1);
    strcpy(R.weights_path, o->run.weights);
  }
  ReplLoop L = {&R, NULL, NULL, false};
  if (R.tty) {
    open_terminal(&L);
    fputs("ctx repl — :help lists the commands, :quit or Ctrl-D leaves\n", stdout);
  }
  if (o->nfiles == 1) repl_load(&R, o->files[0]);
  loop(&L);
  close_terminal(&L);
  repl_free(&R);
  return CTX_EXIT_OK;
}
