#!/usr/bin/python3
"""Keeps the house: the shape of src/ and include/ that docs/architecture.md
describes, checked from the code itself.

1. Modules include only modules below them (LAYERS): no include runs back up.
   A new arrow between modules is a design decision: add it here, and to
   docs/architecture.md, in the same change.
2. No circle of includes between files.
3. No source file over MAX_LINES lines unless BIG_FILES names it with a
   reason (one concept per file: split before you grow past it).

Run alone: python3 tests/unit/test_house.py (no build needed).
"""

import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Each module and the modules it may include (besides itself). Lowest first.
LAYERS = {
    "common": set(),
    "config": {"common"},
    "governor": {"common"},
    "spill": {"common"},
    "declarations": {"common"},
    "cache": {"common", "declarations"},
    "trace": {"common", "cache"},
    "store": {"common", "cache"},
    "tier": {"common", "cache", "store", "spill"},
    "control": {"common", "cache", "declarations"},
    "plan": {"common"},
    "sim": {"common", "cache", "declarations", "trace"},
    "tools": {"common"},
    "fs": {"common", "config", "cache", "declarations", "store", "control", "spill"},
    "daemon": {"common", "config", "cache", "declarations", "store", "control", "spill", "trace",
               "governor", "fs", "tier"},
    "main": {"common", "config", "daemon", "plan", "sim", "tools"},
}

MAX_LINES = 500
# Files allowed past MAX_LINES, each with the reason it is one concept.
BIG_FILES = {
    "src/cache/declared_future.cc":
        "the declared future: every job's next read of each object and each job's pace, one "
        "index updated together (splitting the pace model out is the next cut)",
    "src/config/config.cc":
        "the key table, one row per key (the one place a key is defined), and its TOML walker",
    "src/spill/spill_store.cc":
        "the spill namespace (create, mkdir, rename, chown, the scan at open) over store_core",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources():
    for top in ("src", "include"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if name.endswith((".cc", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def module_of(rel):
    parts = rel.split(os.sep)
    if parts[0] == "src":
        return parts[1] if len(parts) > 2 else "main"
    return parts[2]  # include/epochfs/MODULE/...


def resolve(rel, target):
    """The repository path an include names, or None (a system header)."""
    if target.startswith("epochfs/"):
        return os.path.join("include", target)
    local = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    if os.path.exists(os.path.join(ROOT, local)):
        return local
    return None


def includes():
    out = {}
    for rel in sources():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            names = [m.group(1) for m in map(INCLUDE.match, f) if m]
        out[rel] = [r for r in (resolve(rel, n) for n in names) if r]
    return out


class HouseTest(unittest.TestCase):
    def test_modules_include_only_modules_below(self):
        wrong = []
        for rel, targets in includes().items():
            mod = module_of(rel)
            self.assertIn(mod, LAYERS, "%s: module %s is not in LAYERS" % (rel, mod))
            for t in targets:
                tmod = module_of(t)
                if tmod != mod and tmod not in LAYERS[mod]:
                    wrong.append("%s includes %s (%s -> %s)" % (rel, t, mod, tmod))
        self.assertEqual(wrong, [], "includes that run back up or sideways")

    def test_no_circle_of_includes(self):
        graph = includes()
        state = {}  # 1: on the path, 2: done
        circles = []

        def visit(node, path):
            state[node] = 1
            for t in graph.get(node, []):
                if state.get(t) == 1:
                    circles.append(" -> ".join(path[path.index(t):] + [t]))
                elif t not in state:
                    visit(t, path + [t])
            state[node] = 2

        for node in sorted(graph):
            if node not in state:
                visit(node, [node])
        self.assertEqual(circles, [])

    def test_files_stay_small(self):
        big = {}
        for rel in sources():
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                n = sum(1 for _ in f)
            if n > MAX_LINES:
                big[rel] = n
        unexplained = {rel: n for rel, n in big.items() if rel not in BIG_FILES}
        self.assertEqual(unexplained, {}, "files over %d lines: split them, or name them in "
                         "BIG_FILES with the reason they are one concept" % MAX_LINES)
        stale = sorted(set(BIG_FILES) - set(big))
        self.assertEqual(stale, [], "BIG_FILES names files that are small now (or gone)")

    def test_the_checks_can_fail(self):
        self.assertEqual(module_of(os.path.join("include", "epochfs", "fs", "x.h")), "fs")
        self.assertNotIn("fs", LAYERS["store"])
        self.assertNotIn("daemon", LAYERS["fs"])


if __name__ == "__main__":
    sys.exit(unittest.main())
