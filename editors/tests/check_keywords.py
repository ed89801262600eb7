#!/usr/bin/env python3
"""Keeps the editor grammars in sync with grammar/keywords.def.

For every class of the table (DECL, CONTROL, ...) each editor must list exactly
the words of that class, in one clearly delimited place:

  VS Code  editors/vscode/syntaxes/ctx.tmLanguage.json: the repository rule
           `keywords-<class>` (lower case); its words are the word alternations
           `(a|b|c)` / `(?:a|b)` in the rule's match/begin regexes. No other rule
           of the grammar may hold such a word alternation.
  Vim      editors/vim/syntax/ctx.vim: the `syn keyword ctx<Class> ...` lines
           (ctxDecl, ctxTypearg, ...; options like contained or nextgroup=
           are not words). The only other keyword group allowed is ctxTodo.
  Emacs    editors/emacs/ctx-mode.el: `(defconst ctx-mode-<class>-words '("a" ...))`.

Fails when a word of the table is missing from an editor, when an editor lists
a word the table does not have (or under another class), or when an editor has
a list for a class the table does not have.

usage: check_keywords.py [ROOT]   (ROOT defaults to the checkout holding this file)
"""

import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctxlex  # noqa: E402

WORD = r"[A-Za-z_][A-Za-z0-9_]*"
ALTERNATION_RE = re.compile(r"\((?:\?:)?(" + WORD + r"(?:\|" + WORD + r")*)\)")
VIM_OPTIONS = {"contained", "skipwhite", "skipnl", "skipempty", "transparent",
               "display", "fold", "extend", "oneline", "concealends", "conceal",
               "excludenl", "keepend"}
VIM_OTHER_GROUPS = {"ctxTodo"}


def regexes(node):
    """Every match/begin/end/while regex under a TextMate grammar node."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("match", "begin", "end", "while") and isinstance(v, str):
                yield v
            else:
                yield from regexes(v)
    elif isinstance(node, list):
        for v in node:
            yield from regexes(v)


def vscode_words(path, problems):
    with open(path, encoding="utf-8") as f:
        g = json.load(f)
    out = {}
    repo = g.get("repository", {})
    for key, rule in repo.items():
        m = re.fullmatch(r"keywords-([a-z_]+)", key)
        words = [w for rx in regexes(rule) for grp in ALTERNATION_RE.findall(rx)
                 for w in grp.split("|")]
        if m:
            out.setdefault(m.group(1).upper(), []).extend(words)
        elif words:
            problems.append(f"{path}: rule '{key}' lists words {sorted(set(words))} outside "
                            "the keywords-<class> rules (move them there)")
    top = [w for rx in regexes(g.get("patterns", [])) for grp in ALTERNATION_RE.findall(rx)
           for w in grp.split("|")]
    if top:
        problems.append(f"{path}: top-level patterns list words {sorted(set(top))} outside "
                        "the keywords-<class> rules")
    return out


def vim_words(path, problems):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    joined = []
    for line in lines:  # join Vim's `\` continuation lines
        if re.match(r"^\s*\\", line) and joined:
            joined[-1] += " " + re.sub(r"^\s*\\", "", line)
        else:
            joined.append(line)
    out = {}
    for line in joined:
        m = re.match(r"^\s*syn(?:t|ta|tax)?\s+keyword\s+(\w+)\s+(.*)$", line)
        if not m:
            continue
        group = m.group(1)
        words = [t for t in m.group(2).split()
                 if "=" not in t and t not in VIM_OPTIONS]
        if group in VIM_OTHER_GROUPS:
            continue
        gm = re.fullmatch(r"ctx([A-Z][a-z_]*)", group)
        if not gm:
            problems.append(f"{path}: keyword group {group} is not ctx<Class> of "
                            "keywords.def (nor one of %s)" % sorted(VIM_OTHER_GROUPS))
            continue
        out.setdefault(gm.group(1).upper(), []).extend(words)
    return out


def emacs_words(path, problems):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"\(defconst\s+ctx-mode-([a-z_]+)-words\s+'\(([^()]*)\)", text):
        words = re.findall(r'"([^"\\]*)"', m.group(2))
        out.setdefault(m.group(1).upper(), []).extend(words)
    return out


def compare(editor, path, table_by_class, found, problems):
    """Appends problems; returns the number of (class) checks made."""
    checks = 0
    for cls, words in sorted(table_by_class.items()):
        checks += 1
        have = found.get(cls, [])
        missing = [w for w in words if w not in have]
        extra = sorted(set(have) - set(words))
        dups = sorted({w for w in have if have.count(w) > 1})
        if cls not in found:
            problems.append(f"{editor}: no word list for class {cls} in {path}")
        elif missing:
            problems.append(f"{editor}: class {cls}: missing {missing} in {path}")
        if extra:
            problems.append(f"{editor}: class {cls}: {extra} are not {cls} words of "
                            f"keywords.def (in {path})")
        if dups:
            problems.append(f"{editor}: class {cls}: {dups} listed twice in {path}")
    for cls in sorted(set(found) - set(table_by_class)):
        checks += 1
        problems.append(f"{editor}: class {cls} (words {sorted(set(found[cls]))}) is not a "
                        f"class of keywords.def (in {path})")
    return checks


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(argv[1]) if len(argv) > 1 else os.path.dirname(os.path.dirname(here))
    table = ctxlex.read_table(os.path.join(root, "grammar", "keywords.def"))
    by_class = ctxlex.words_by_class(table)
    seen = {}
    problems = []
    for w, c, _ in table:
        if w in seen:
            problems.append(f"keywords.def: '{w}' is listed twice ({seen[w]}, {c})")
        seen[w] = c
    editors = [
        ("vscode", os.path.join(root, "editors/vscode/syntaxes/ctx.tmLanguage.json"), vscode_words),
        ("vim", os.path.join(root, "editors/vim/syntax/ctx.vim"), vim_words),
        ("emacs", os.path.join(root, "editors/emacs/ctx-mode.el"), emacs_words),
    ]
    checks = 0
    for name, path, extract in editors:
        found = extract(path, problems)
        checks += compare(name, os.path.relpath(path, root), by_class, found, problems)
        print(f"{name}: {sum(len(v) for v in found.values())} words in {len(found)} classes "
              f"({os.path.relpath(path, root)})")
    print(f"keywords.def: {len(table)} words in {len(by_class)} classes")
    for p in problems:
        print("FAIL " + p)
    failed = min(len(problems), checks)
    print(f"keyword sync: {checks - failed} passed, {failed} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
