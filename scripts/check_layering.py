#!/usr/bin/env python3
"""check_layering.py — includes go only downward (ARCHITECTURE.md).

driver -> codegen -> sched -> ilir -> ra -> sema -> grammar -> support; a stage
includes its own headers and those of stages below it. runtime/ is linked into
users' programs and includes no compiler header; from RA on, stages may use it
(the interpreter and the backends run on its forests). Prints one line per
violation and exits 1 if there is any.
"""
import os
import re
import sys

ORDER = ["support", "grammar", "sema", "ra", "ilir", "sched", "codegen", "driver"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')


def allowed(stage, target):
    if stage == "runtime":
        return target == "runtime"
    if target == "runtime":
        return stage in ("ra", "ilir", "sched", "codegen", "driver")
    if target not in ORDER:
        return True  # generated headers in the build tree, system headers
    return ORDER.index(target) <= ORDER.index(stage)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = 0
    for stage in ORDER + ["runtime"]:
        for dirpath, _, files in os.walk(os.path.join(root, stage)):
            for name in files:
                if not name.endswith((".c", ".h", ".re", ".y")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for num, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and not allowed(stage, m.group(1)):
                            print("%s:%d: %s/ must not include %s/" % (
                                os.path.relpath(path, root), num, stage, m.group(1)))
                            bad += 1
    print("layering: %d violation(s)" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
