/* driver_opts.c — what the command line says about words it does not know:
 * a suggestion for a misspelt option or verb, and a plain statement for the
 * planned features that are not there yet, instead of "unknown option".
 *
 * A verb's options are read from its help text (every line whose first word
 * starts with '-': `  -o, --output DIR`), so a suggestion can never name an
 * option the verb lacks and a new option needs no second list. Planned
 * features are one table below; a verb or option that exists is matched
 * before this file is asked, so an entry here does nothing once the feature
 * lands.
 */
#include "driver/driver.h"

#include <string.h>

/* Planned verbs and options (ARCHITECTURE.md), with what to do meanwhile. */
typedef struct {
  const char *name;
  const char *what;
} Planned;

static const Planned planned_verbs[] = {
    {"bench", "'ctx bench' is planned and not built yet; bench/run.sh measures ctx against "
              "its baselines"},
};

static const Planned planned_options[] = {
    {"--autotune", "there is no --autotune: 'ctx tune MODEL.ctx --input SAMPLE -o "
                   "FILE.sched' searches a schedule, -s FILE.sched applies it"},
};

static const char *planned(const Planned *t, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].name, name) == 0) return t[i].what;
  return NULL;
}

/* Edit distance allowed for a word of [len] bytes: typos, not other words. */
static int typo_cap(size_t len) { return len <= 3 ? 1 : len <= 6 ? 2 : 3; }

/* The option of [help] closest to [name] (copied into [buf]), or NULL. */
static const char *closest_option(const char *help, const char *name, char *buf,
                                  size_t bufsize) {
  int best = typo_cap(strlen(name)) + 1;
  const char *found = NULL;
  for (const char *p = help; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    while (*p == ' ') p++;
    while (*p == '-') { /* `-o, --output DIR`, `--disable=OPT`: names up to ' ' ',' '=' */
      size_t n = strcspn(p, " ,=\n");
      if (n < bufsize) {
        char word[64];
        size_t m = n < sizeof word ? n : sizeof word - 1;
        memcpy(word, p, m);
        word[m] = 0;
        int d = ctx_edit_distance(name, word, best);
        if (d > 0 && d < best) {
          best = d;
          memcpy(buf, word, m + 1);
          found = buf;
        }
      }
      p += n;
      if (p[0] != ',' || p[1] != ' ') break;
      p += 2;
    }
  }
  return found;
}

int ctx_unknown_option(const char *verb, const char *usage, const char *help, const char *arg) {
  char name[64];
  size_t n = strcspn(arg, "=");
  if (n >= sizeof name) n = sizeof name - 1;
  memcpy(name, arg, n);
  name[n] = 0;
  char msg[512];
  const char *what = planned(planned_options, sizeof planned_options / sizeof *planned_options,
                             name);
  char near[64];
  if (what)
    snprintf(msg, sizeof msg, "option '%s': %s", name, what);
  else if (closest_option(help, name, near, sizeof near))
    snprintf(msg, sizeof msg, "unknown option '%s'; did you mean '%s'?", arg, near);
  else
    snprintf(msg, sizeof msg, "unknown option '%s'", arg);
  return ctx_usage_error(verb, usage, "%s", msg);
}

int ctx_value_option(const char *verb, const char *usage, const char *opt, int argc,
                     char **argv, int *i, const char **slot) {
  const char *a = argv[*i];
  size_t n = strlen(opt);
  if (strncmp(a, opt, n) != 0 || (a[n] != 0 && a[n] != '=')) return CTX_OPT_NOT_MINE;
  const char *val = a[n] == '=' ? a + n + 1 : *i + 1 < argc ? argv[++*i] : "";
  if (*val == 0) return ctx_usage_error(verb, usage, "option '%s' needs a value", a), CTX_OPT_BAD;
  if (*slot) return ctx_usage_error(verb, usage, "option '%s' given twice", a), CTX_OPT_BAD;
  *slot = val;
  return CTX_OPT_TAKEN;
}

int ctx_unknown_verb(const char *name, const char *const *verbs, int nverbs) {
  char msg[512];
  const char *what = planned(planned_verbs, sizeof planned_verbs / sizeof *planned_verbs, name);
  int best = typo_cap(strlen(name)) + 1;
  const char *near = NULL;
  for (int i = 0; i < nverbs; i++) {
    int d = ctx_edit_distance(name, verbs[i], best);
    if (d < best) best = d, near = verbs[i];
  }
  if (what)
    snprintf(msg, sizeof msg, "%s", what);
  else if (near)
    snprintf(msg, sizeof msg, "unknown verb '%s'; did you mean '%s'?", name, near);
  else
    snprintf(msg, sizeof msg, "unknown verb '%s'", name);
  return ctx_usage_error(NULL, NULL, "%s", msg);
}
