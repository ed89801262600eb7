/* grammar_lex.re — the ctx lexer (re2c).
 *
 * Turns the text of one registered source into tokens for the parser.
 *
 * Statement separators: a newline ends a statement (token SEP) when the line's
 * last token can end one — an identifier, a number, a string, `)`, `]`, `}`
 * or a type keyword — as in Go. It does not when the newline sits inside `(`
 * or `[`, or when the next line starts with a binary operator, `->`, `.` or
 * `else` (so long expressions continue on the next line with the operator in
 * front). `;` separates too. A SEP is also inserted before `}` and at the end
 * of input when the last token needs one, and runs of separators collapse.
 *
 * Recovery: a line that starts with a keyword that only begins a statement or
 * declaration (`let`, `rec`, ...) always ends the line before it, and closes
 * any `(` or `[` left open there, so one missing `)` or operand costs one
 * error, not the rest of the file.
 *
 * Bad bytes (NUL, invalid UTF-8, stray characters) are reported with their
 * position and skipped. More than AST_MAX_NESTING open brackets ends the input
 * with an error, which bounds the parser's stack and every later recursion.
 */
#include "grammar/grammar_int.h"
#include "grammar_parse.h" /* generated token numbers */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The keyword table (KEYWORD-TABLE). */
static const AstWord words[] = {
#define CTX_KEYWORD(s, c, t) {s, KW_##c, t},
#define CTX_WORD(s, c) {s, KW_##c, 0},
#include "grammar/keywords.def"
#undef CTX_KEYWORD
#undef CTX_WORD
};

const AstWord *ast_words(int *count) {
  *count = (int)(sizeof words / sizeof words[0]);
  return words;
}

const AstWord *ast_word_lookup(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strlen(words[i].spelling) == len && memcmp(words[i].spelling, name, len) == 0)
      return &words[i];
  return NULL;
}

void grammar_lexer_init(GrammarLexer *lx, CtxArena *arena, CtxDiag *diag, int file) {
  memset(lx, 0, sizeof *lx);
  const CtxSource *src = ctx_sources_get(diag->srcs, file);
  lx->arena = arena;
  lx->diag = diag;
  lx->file = file;
  lx->base = lx->cur = lx->line_start = src->text;
  lx->lim = src->text + src->len;
  lx->line = 1;
}

static CtxSpan span_at(const GrammarLexer *lx, const char *b, const char *e) {
  CtxSpan s;
  s.file = lx->file;
  s.line = s.end_line = lx->line;
  s.col = (int)(b - lx->line_start) + 1;
  s.end_col = (int)(e - lx->line_start) + 1;
  return s;
}

static void newline(GrammarLexer *lx, const char *after) {
  lx->line++;
  lx->line_start = after;
}

static bool ends_statement(int kind) {
  switch (kind) {
  case IDENT: case NUMBER: case STRING: case ')': case ']': case '}':
  case T_F32: case T_I32: case T_SEQUENCE:
    return true;
  default:
    return false;
  }
}

static bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_';
}

/* Skips blanks, newlines and comments from [p]; returns the next significant
 * character's position (lx->lim at the end). */
static const char *skip_layout(const GrammarLexer *lx, const char *p) {
  while (p < lx->lim) {
    if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
      p++;
    } else if (*p == '#' || (*p == '/' && p + 1 < lx->lim && p[1] == '/')) {
      while (p < lx->lim && *p != '\n') p++;
    } else {
      break;
    }
  }
  return p;
}

static bool word_at(const GrammarLexer *lx, const char *p, const char *w) {
  size_t n = strlen(w);
  return (size_t)(lx->lim - p) >= n && memcmp(p, w, n) == 0 &&
         (p + n == lx->lim || !is_ident_char(p[n]));
}

/* Does the line after a newline continue the current statement? */
static bool continues(const GrammarLexer *lx, const char *next) {
  if (next >= lx->lim) return false;
  if (strchr("+-*/@.=!<>&|", *next)) return true;
  return word_at(lx, next, "else");
}

/* Does the next line start a new statement or declaration for sure? */
static bool starts_statement(const GrammarLexer *lx, const char *next) {
  static const char *const kws[] = {"let", "return", "if", "for", "rec", "def", "dim",
                                    "input", "param", "output", "model", "use",
                                    "schedule"};
  for (size_t i = 0; i < sizeof kws / sizeof kws[0]; i++)
    if (word_at(lx, next, kws[i])) return true;
  return false;
}

/* Reports a lexical error. The parser stays quiet about the rest of the
 * statement: its complaints would only echo this one. */
static void lex_error(GrammarLexer *lx, const char *b, const char *e, const char *fmt,
                      const char *arg) {
  ctx_diag_error(lx->diag, span_at(lx, b, e), fmt, arg);
  lx->quiet = true;
}

/* Reports the byte at [p] that cannot start a token. */
static void bad_char(GrammarLexer *lx, const char *p, const char *e) {
  unsigned char c = (unsigned char)*p;
  char text[32];
  if (c == 0) {
    lex_error(lx, p, e, "%s in source", "NUL byte");
  } else if (c >= 0x80) {
    long bad = ctx_utf8_invalid_at(p, (size_t)(lx->lim - p) < 4 ? (size_t)(lx->lim - p) : 4);
    if (bad == 0) {
      snprintf(text, sizeof text, "0x%02x", c);
      lex_error(lx, p, e, "invalid UTF-8 byte %s", text);
    } else {
      lex_error(lx, p, e, "unexpected character '%s'", ctx_arena_strndup(lx->arena, p, (size_t)(e - p)));
    }
  } else if (c < 0x20 || c == 0x7f) {
    snprintf(text, sizeof text, "0x%02x", c);
    lex_error(lx, p, e, "unexpected control character %s", text);
  } else {
    snprintf(text, sizeof text, "%c", c);
    lex_error(lx, p, e, "unexpected character '%s'", text);
  }
}

/* Length of the (valid or not) UTF-8 sequence at [p], for skipping it whole. */
static size_t utf8_len(const GrammarLexer *lx, const char *p) {
  unsigned char c = (unsigned char)*p;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 1;
  size_t left = (size_t)(lx->lim - p);
  if (n > left) n = left;
  if (ctx_utf8_invalid_at(p, n) >= 0) return 1;
  return n;
}

static void check_utf8(GrammarLexer *lx, const char *b, const char *e, const char *what) {
  long bad = ctx_utf8_invalid_at(b, (size_t)(e - b));
  if (bad >= 0) lex_error(lx, b + bad, b + bad + 1, "invalid UTF-8 in %s", what);
}

static void make_number(GrammarLexer *lx, GrammarToken *t, bool is_int) {
  size_t len = (size_t)(lx->cur - lx->tok);
  char *text = ctx_arena_strndup(lx->arena, lx->tok, len);
  errno = 0;
  t->text = text;
  t->is_int = is_int;
  t->num = strtod(text, NULL);
  if (errno == ERANGE && t->num != 0)
    lex_error(lx, lx->tok, lx->cur, "number '%s' is out of range", text);
  else if (is_int && t->num > 4611686018427387904.0) /* 2^62 */
    lex_error(lx, lx->tok, lx->cur, "integer '%s' is too large", text);
}

static void make_string(GrammarLexer *lx, GrammarToken *t) {
  CtxBuf b;
  ctx_buf_init(&b);
  for (const char *p = lx->tok + 1; p < lx->cur - 1; p++) {
    if (*p != '\\') {
      ctx_buf_putc(&b, *p);
      continue;
    }
    char c = *++p;
    ctx_buf_putc(&b, c == 'n' ? '\n' : c == 't' ? '\t' : c);
  }
  t->text = ctx_arena_strndup(lx->arena, ctx_buf_str(&b), b.len);
  ctx_buf_free(&b);
  check_utf8(lx, lx->tok, lx->cur, "string");
}

/* Records an opening bracket; false (input ends) past the nesting limit. */
static bool open_bracket(GrammarLexer *lx, char c) {
  if (lx->depth == AST_MAX_NESTING) {
    char lim[16];
    snprintf(lim, sizeof lim, "%d", AST_MAX_NESTING);
    lex_error(lx, lx->tok, lx->cur, "brackets nested too deeply (more than %s open)", lim);
    lx->stopped = true;
    return false;
  }
  lx->open[lx->depth++] = c;
  return true;
}

static void close_bracket(GrammarLexer *lx, char c) {
  if (c == '}') { /* a '}' also closes any '(' or '[' left open inside it */
    while (lx->depth > 0 && lx->open[lx->depth - 1] != '{') lx->depth--;
    if (lx->depth > 0) lx->depth--;
    return;
  }
  char opener = c == ')' ? '(' : '[';
  if (lx->depth > 0 && lx->open[lx->depth - 1] == opener) lx->depth--;
}

static bool in_parens(const GrammarLexer *lx) {
  return lx->depth > 0 && lx->open[lx->depth - 1] != '{';
}

/* Scans one raw token: the parser's kinds, plus '\n' for a newline and -1
 * for something already reported and skipped. */
static int scan(GrammarLexer *lx, GrammarToken *t) {
  for (;;) {
    lx->tok = lx->cur;
    /*!re2c
      re2c:api:style = free-form;
      re2c:define:YYCTYPE = "unsigned char";
      re2c:define:YYCURSOR = "lx->cur";
      re2c:define:YYMARKER = "lx->mrk";
      re2c:define:YYLIMIT = "lx->lim";
      re2c:define:YYPEEK = "(unsigned char)*lx->cur";
      re2c:define:YYSKIP = "++lx->cur;";
      re2c:define:YYBACKUP = "lx->mrk = lx->cur;";
      re2c:define:YYRESTORE = "lx->cur = lx->mrk;";
      re2c:define:YYLESSTHAN = "lx->lim <= lx->cur";
      re2c:yyfill:enable = 0;
      re2c:eof = 0;

      digits = [0-9]+;
      exp    = [eE] [+-]? digits;
      ident  = [a-zA-Z_] [a-zA-Z0-9_]*;

      $ { return 0; }
      [ \t\r]+ { continue; }
      "\n" { newline(lx, lx->cur); return '\n'; }
      ("#" | "//") [^\n\x00]* {
        check_utf8(lx, lx->tok, lx->cur, "comment");
        continue;
      }
      ident {
        const AstWord *w = ast_word_lookup(lx->tok, (size_t)(lx->cur - lx->tok));
        if (w && w->token) return w->token;
        t->text = ctx_arena_strndup(lx->arena, lx->tok, (size_t)(lx->cur - lx->tok));
        return IDENT;
      }
      digits { make_number(lx, t, true); return NUMBER; }
      (digits "." [0-9]* exp? | "." digits exp? | digits exp) {
        make_number(lx, t, false);
        return NUMBER;
      }
      ["] ([^"\\\n\x00] | "\\" [^\n\x00])* ["] { make_string(lx, t); return STRING; }
      ["] ([^"\\\n\x00] | "\\" [^\n\x00])* {
        lex_error(lx, lx->tok, lx->cur, "unterminated string%s", "");
        t->text = ctx_arena_strndup(lx->arena, lx->tok + 1, (size_t)(lx->cur - lx->tok - 1));
        return STRING;
      }
      "==" { return EQ; }
      "!=" { return NE; }
      "<=" { return LE; }
      ">=" { return GE; }
      "&&" { return AND; }
      "||" { return OR; }
      "->" { return ARROW; }
      [-+*/@=<>!(){}[\],:.;] { return (unsigned char)*lx->tok; }
      [\x80-\xff] {
        lx->cur = lx->tok + utf8_len(lx, lx->tok);
        bad_char(lx, lx->tok, lx->cur);
        return -1;
      }
      * { bad_char(lx, lx->tok, lx->cur); return -1; }
    */
  }
}

static void give(GrammarLexer *lx, GrammarToken *out, int kind, CtxSpan span) {
  out->kind = kind;
  out->span = span;
  lx->last = kind;
}

/* Bookkeeping for every token handed to the parser. */
static void handed_out(GrammarLexer *lx, const GrammarToken *t, int prev) {
  if (prev == SEP && t->kind != SEP) lx->quiet = false;
  if (t->kind != SEP) {
    lx->last_end = t->span;
    lx->last_end.line = lx->last_end.end_line;
    lx->last_end.col = lx->last_end.end_col;
  }
}

/* Hands out [tok], or a SEP in front of it when the last token needs one. */
static void give_after_sep(GrammarLexer *lx, GrammarToken *out, GrammarToken *tok) {
  if (ends_statement(lx->last)) {
    lx->pending = *tok;
    lx->has_pending = true;
    CtxSpan s = tok->span;
    s.end_col = s.col;
    give(lx, out, SEP, s);
    return;
  }
  *out = *tok;
  lx->last = tok->kind;
}

/* Handles a newline: returns true when it became a SEP in [out]. */
static bool at_newline(GrammarLexer *lx, GrammarToken *out) {
  CtxSpan s = lx->last_end; /* "found newline" points just past the line's end */
  const char *next = skip_layout(lx, lx->cur);
  if (starts_statement(lx, next)) {
    while (in_parens(lx)) lx->depth--; /* an unclosed '(' or '[' */
  } else if (in_parens(lx) || !ends_statement(lx->last) || continues(lx, next)) {
    return false;
  }
  if (lx->last == SEP || lx->last == '{' || lx->last == 0) return false;
  give(lx, out, SEP, s);
  return true;
}

static void next_token(GrammarLexer *lx, GrammarToken *out);

void grammar_lex(GrammarLexer *lx, GrammarToken *out) {
  int prev = lx->last;
  next_token(lx, out);
  handed_out(lx, out, prev);
}

static void next_token(GrammarLexer *lx, GrammarToken *out) {
  memset(out, 0, sizeof *out);
  if (lx->has_pending) {
    lx->has_pending = false;
    *out = lx->pending;
    lx->last = out->kind;
    return;
  }
  for (;;) {
    GrammarToken t;
    memset(&t, 0, sizeof t);
    int k = lx->stopped ? 0 : scan(lx, &t);
    if (k == -1) continue;
    if (k == '\n') {
      if (at_newline(lx, out)) return;
      continue;
    }
    t.kind = k;
    t.span = span_at(lx, lx->tok, lx->cur);
    if (k == ';' && !in_parens(lx)) {
      if (lx->last == SEP || lx->last == '{' || lx->last == 0) continue;
      give(lx, out, SEP, t.span);
      return;
    }
    if (k == 0 || k == '}') {
      if (k == '}') close_bracket(lx, '}');
      give_after_sep(lx, out, &t);
      return;
    }
    if ((k == '(' || k == '[' || k == '{') && !open_bracket(lx, (char)k)) continue;
    if (k == ')' || k == ']') close_bracket(lx, (char)k);
    *out = t;
    lx->last = k;
    return;
  }
}
