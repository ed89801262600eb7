"""Reference tokenizer for the editor-grammar tests.

Reads grammar/keywords.def (the one table of words) and the example models, and
says, token by token, what each editor grammar must show: which words are table
words of which class, what is a comment, a number, a string, an operator, a
declared name. The editor tests (VS Code in Node, Vim, Emacs ERT) all check the
same expectations, written by `expectations()` as JSON.

Lexical rules follow grammar/grammar_lex.re:
  comments   '#' or '//' to the end of the line
  strings    "..." with backslash escapes, on one line
  numbers    digits | digits '.' digits* exp? | '.' digits exp? | digits exp
  idents     [A-Za-z_][A-Za-z0-9_]*
  operators  -> == != <= >= && || and one of - + * / @ = < > !
  punct      : , . ;   brackets ( ) [ ] { }

Context rules (the same in every editor):
  * reserved keywords and the ACCESSOR/BUILTIN/TYPEARG words are highlighted
    everywhere outside comments and strings;
  * DIRECTIVE and SCHEDARG words only inside the braces of
    `schedule NAME [for TARGET] { ... }` (elsewhere they are plain identifiers);
  * the identifier after model/dim/input/param/schedule is a declared name, after
    rec/def a function name; after `for` in a schedule head, the target;
  * inside a schedule body, an identifier followed by ':' is an op label.
"""

import json
import os
import re
import sys

ENTRY_RE = re.compile(
    r'^\s*CTX_(KEYWORD|WORD)\(\s*"([^"]*)"\s*,\s*([A-Z_]+)\s*(?:,\s*([A-Za-z0-9_]+)\s*)?\)')

# Classes whose words only mean something inside a schedule body.
SCHED_ONLY = {"DIRECTIVE", "SCHEDARG"}
# Declaration keywords followed by a declared name.
NAMED_DECLS = {"model", "dim", "input", "param", "schedule"}
FUNC_DECLS = {"rec", "def"}

OPERATORS = ["->", "==", "!=", "<=", ">=", "&&", "||",
             "-", "+", "*", "/", "@", "=", "<", ">", "!"]
PUNCT = set(":,.;")
BRACKETS = set("()[]{}")

IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NUMBER_RE = re.compile(r"(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")
STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"?')


def read_table(path):
    """Returns [(spelling, class, reserved)] in table order."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ENTRY_RE.match(line)
            if m:
                out.append((m.group(2), m.group(3), m.group(1) == "KEYWORD"))
    if not out:
        raise SystemExit("ctxlex: no CTX_KEYWORD/CTX_WORD entries in " + path)
    return out


def words_by_class(table):
    d = {}
    for spelling, cls, _ in table:
        d.setdefault(cls, []).append(spelling)
    return d


def lex_line(text):
    """Yields (kind, start, end) for one line (character offsets)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r":
            i += 1
            continue
        if c == "#" or text.startswith("//", i):
            yield ("comment", i, n)
            return
        if c == '"':
            m = STRING_RE.match(text, i)
            yield ("string", i, m.end())
            i = m.end()
            continue
        m = IDENT_RE.match(text, i)
        if m:
            yield ("ident", i, m.end())
            i = m.end()
            continue
        m = NUMBER_RE.match(text, i)
        if m and m.end() > i and (c.isdigit() or m.end() > i + 1):
            yield ("number", i, m.end())
            i = m.end()
            continue
        for op in OPERATORS:
            if text.startswith(op, i):
                yield ("op", i, i + len(op))
                i += len(op)
                break
        else:
            if c in PUNCT:
                yield ("punct", i, i + 1)
            elif c in BRACKETS:
                yield ("bracket", i, i + 1)
            else:
                yield ("other", i, i + 1)
            i += 1


def _coords(line_text, start, end):
    """Character, UTF-8 byte and UTF-16 offsets of [start, end) in the line."""
    def b(k):
        return len(line_text[:k].encode("utf-8"))

    def u(k):
        return len(line_text[:k].encode("utf-16-le")) // 2
    last = end - 1
    return {
        "col": start, "len": end - start, "lastcol": last,
        "bcol": b(start), "blen": b(end) - b(start), "lastbcol": b(last),
        "ucol": u(start), "ulen": u(end) - u(start),
    }


def tokens(path, table):
    """The expectation records for one source file."""
    cls_of = {w: c for w, c, _ in table}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    raw = []
    for ln, text in enumerate(lines, start=1):
        for kind, s, e in lex_line(text):
            raw.append([kind, ln, s, e, text[s:e], text])

    out = []
    depth = 0            # brace depth
    sched_depth = None   # brace depth of the schedule body we are in
    sched_head = False   # between `schedule` and its `{`
    after_for = False
    prev_sig = None      # previous significant (non-comment) token
    for idx, (kind, ln, s, e, word, text) in enumerate(raw):
        rec = {"line": ln, "text": word}
        rec.update(_coords(text, s, e))
        in_sched = sched_depth is not None
        if kind == "comment":
            rec["kind"] = "comment"
            out.append(rec)
            continue
        nxt = None
        for k in range(idx + 1, len(raw)):
            if raw[k][0] != "comment":
                nxt = raw[k]
                break
        if kind == "ident":
            cls = cls_of.get(word)
            prev_word = prev_sig[4] if prev_sig and prev_sig[0] == "ident" else None
            if prev_word in NAMED_DECLS | FUNC_DECLS and cls_of.get(prev_word) == "DECL":
                rec["kind"] = "funcname" if prev_word in FUNC_DECLS else "declname"
                rec["decl"] = prev_word
            elif cls is not None and (cls not in SCHED_ONLY or in_sched):
                rec["kind"] = "word"
                rec["class"] = cls
            elif sched_head and after_for:
                rec["kind"] = "target"
            elif in_sched and nxt is not None and nxt[0] == "punct" and nxt[4] == ":" \
                    and nxt[1] == ln:
                rec["kind"] = "label"
            else:
                rec["kind"] = "ident"
            if word == "schedule" and cls == "DECL":
                sched_head, after_for = True, False
            elif sched_head and word == "for":
                after_for = True
        elif kind == "bracket":
            rec["kind"] = "bracket"
            if word == "{":
                depth += 1
                if sched_head:
                    sched_depth, sched_head = depth, False
            elif word == "}":
                if sched_depth is not None and depth == sched_depth:
                    sched_depth = None
                depth = max(0, depth - 1)
        else:
            rec["kind"] = kind
        out.append(rec)
        prev_sig = [kind, ln, s, e, word]
    return out


def source_files(root):
    """Every examples/*.ctx and *.sched, then the editors' own fixtures."""
    out = []
    for d in (os.path.join(root, "examples"),
              os.path.join(root, "editors", "tests", "fixtures")):
        if os.path.isdir(d):
            out += [os.path.join(d, n) for n in sorted(os.listdir(d))
                    if n.endswith(".ctx") or n.endswith(".sched")]
    return out


def continuation_lines(path):
    """1-based numbers of lines that start with an infix operator (the lexer's
    continuation lines, whose indentation is an alignment choice)."""
    out = set()
    with open(path, encoding="utf-8") as f:
        for ln, text in enumerate(f.read().split("\n"), start=1):
            t = text.lstrip()
            if t and t[0] in "+-*/@.=!<>&|" and not t.startswith("//"):
                out.add(ln)
    return out


def expectations(root):
    table = read_table(os.path.join(root, "grammar", "keywords.def"))
    files = []
    for path in source_files(root):
        files.append({
            "path": path,
            "name": os.path.relpath(path, root),
            "tokens": tokens(path, table),
            "continuation_lines": sorted(continuation_lines(path)),
        })
    if not any(f["name"].startswith("examples" + os.sep) for f in files):
        raise SystemExit("ctxlex: no examples/*.ctx or *.sched under " + root)
    return {
        "root": root,
        "table": [{"word": w, "class": c, "reserved": r} for w, c, r in table],
        "classes": sorted({c for _, c, _ in table}),
        "files": files,
    }


def main(argv):
    if len(argv) != 3:
        print("usage: ctxlex.py ROOT OUT.json", file=sys.stderr)
        return 2
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(expectations(os.path.abspath(argv[1])), f, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
