#!/usr/bin/env python3
"""Lists import cycles between the top-level modules of a crate.

usage: scripts/import-cycles.py CRATE_SRC_DIR [...]

A module's imports are the `crate::NAME` paths in its files (a `use crate::{a, b::c}` group
counts each NAME); `src/foo.rs` and `src/foo/**.rs` are the module `foo`; `lib.rs` is left
out (it declares and re-exports every module). Prints each strongly connected group of two or
more modules and exits 1 if there is one, else prints nothing and exits 0.
"""
import os
import re
import sys


def modules(src):
    """Maps each top-level module name to the text of its files."""
    texts = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            top = rel.split(os.sep)[0]
            name = top[:-3] if top.endswith(".rs") else top
            if name in ("lib", "main", "bin"):
                continue
            with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                texts[name] = texts.get(name, "") + fh.read()
    return texts


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def imports(text, names):
    text = strip_comments(text)
    found = set(re.findall(r"\bcrate::(\w+)", text))
    for group in re.findall(r"\bcrate::\{([^;]*?)\}\s*;", text, flags=re.S):
        depth, token = 0, ""
        for ch in group + ",":
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                head = re.match(r"\s*(\w+)", token)
                if head:
                    found.add(head.group(1))
                token = ""
            else:
                token += ch
    return {n for n in found if n in names}


def cycles(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    bad = False
    for src in sys.argv[1:]:
        texts = modules(src)
        graph = {m: imports(t, texts.keys()) - {m} for m, t in texts.items()}
        for group in cycles(graph):
            bad = True
            print(f"{src}: cycle of {len(group)}: {' '.join(group)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
