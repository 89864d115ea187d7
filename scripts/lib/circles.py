#!/usr/bin/env python3
"""Import circles between the modules of src/ (one module per file).

An edge a -> b when a's code names b (a `use` line or an inline path:
`crate::x::y`, `super::x`, `self::x`), resolved to the longest module
that exists. A module and its own ancestors are not counted (a parent
declares and composes its children); test code (`#[cfg(test)]` modules,
cut from the `#[cfg(test)]` before `mod ...` to the end of the file, and
test-only files) is left out. Prints every circle (a strongly connected
set of more than one module) and exits 1 when there is one.
"""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else "src"
mods = {}  # module path tuple -> file
for d, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".rs"):
            continue
        p = os.path.join(d, f)
        rel = os.path.relpath(p, root)[:-3].split(os.sep)
        if rel in (["lib"], ["main"]):
            rel = []
        elif rel[-1] == "mod":
            rel = rel[:-1]
        mods[tuple(rel)] = p

def test_only(m):
    """Declared `#[cfg(test)] mod name;` in its parent."""
    if not m:
        return False
    parent = mods.get(m[:-1])
    if parent is None:
        return False
    text = open(parent).read()
    return re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+%s\s*;" % re.escape(m[-1]), text) is not None

def code(p):
    text = open(p).read()
    cut = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
    text = text[: cut.start()] if cut else text
    text = re.sub(r"//[^\n]*", "", text)  # comments (doc links name modules too)
    return text

def resolve(path):
    for n in range(len(path), -1, -1):
        if tuple(path[:n]) in mods:
            return tuple(path[:n])
    return None

def expand(prefix, body):
    """`a::{b, c::{d}}` -> [[a,b],[a,c,d]] (names only, rough)."""
    out = []
    body = body.strip()
    m = re.match(r"^([\w:]*?)(::)?\{(.*)\}$", body, re.S)
    if m:
        head = [x for x in m.group(1).split("::") if x]
        depth, cur, parts = 0, "", []
        for ch in m.group(3):
            if ch == "," and depth == 0:
                parts.append(cur); cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        parts.append(cur)
        for part in parts:
            if part.strip():
                out += expand(prefix + head, part)
        return out
    name = re.split(r"\s+as\s+", body)[0]
    return [prefix + [x for x in name.split("::") if x and x != "self"]]

edges = {m: set() for m in mods}
for m, p in mods.items():
    if test_only(m):
        continue
    text = code(p)
    paths = []
    for u in re.finditer(r"\buse\s+([^;]+);", text):
        paths += expand([], u.group(1))
    paths += [x.group(0).split("::") for x in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+", text)]
    here = list(m)
    for path in paths:
        if not path:
            continue
        if path[0] == "crate":
            full = path[1:]
        elif path[0] in ("super", "self"):
            base = list(here)
            i = 0
            while i < len(path) and path[i] in ("super", "self"):
                if path[i] == "super":
                    base = base[:-1]
                i += 1
            full = base + path[i:]
        else:
            continue
        t = resolve(full)
        if t is None or t == m or test_only(t):
            continue
        if m[: len(t)] == t or t[: len(m)] == m:  # an ancestor or a descendant
            continue
        edges[m].add(t)

# Tarjan's strongly connected components.
index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1
    stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v:
                break
        if len(c) > 1:
            sccs.append(c)
for v in mods:
    if v not in index:
        visit(v)
name = lambda m: "::".join(m) or "crate"
for c in sccs:
    members = sorted(c)
    print("circle:", " <-> ".join(name(x) for x in members))
    for a in members:
        for b in sorted(edges[a] & set(members)):
            print(f"  {name(a)} -> {name(b)}")
print(f"{len(mods)} modules, {sum(len(e) for e in edges.values())} edges, {len(sccs)} circle(s)")
sys.exit(1 if sccs else 0)
