#!/usr/bin/python3
"""The figures' tables (scripts/bench/figures) stay readable by the script that
regenerates them: every generated region of docs/benchmarks.md is closed,
names a known figure and the commit it was measured at, which exists (or is
empty: placed, not generated yet); the README's headline rows are a region
the script can rewrite. Whether a table
is current is not a test (the code changes more often than a benchmark
runs): `scripts/bench/figures --check` says, and the closing note of a change
to the data path says what was re-run.

Run alone: python3 tests/unit/test_figures.py (no build needed).
"""
import importlib.machinery
import importlib.util
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "bench", "figures")


def load_script():
    loader = importlib.machinery.SourceFileLoader("figures", SCRIPT)
    spec = importlib.util.spec_from_loader("figures", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class FiguresTest(unittest.TestCase):
    def setUp(self):
        self.fig = load_script()
        with open(self.fig.DOC) as f:
            self.doc = f.read()

    def test_every_region_is_closed_and_names_a_known_figure(self):
        begins = re.findall(r"<!-- figure (\S+) begin -->", self.doc)
        ends = re.findall(r"<!-- figure (\S+) end -->", self.doc)
        self.assertEqual(begins, ends)
        self.assertEqual(len(begins), len(set(begins)), "a figure's region twice")
        for name in begins:
            self.assertIn(name, self.fig.BY_NAME, name)

    def test_every_region_names_a_commit_that_exists(self):
        inside = subprocess.run(["git", "-C", ROOT, "rev-parse", "--git-dir"],
                                capture_output=True).returncode == 0
        for name in re.findall(r"<!-- figure (\S+) begin -->", self.doc):
            span = self.fig.region(self.doc, name)
            if span is not None and not self.doc[span[0]:span[1]].strip():
                continue  # placed, not generated yet: the script fills it in
            commit = self.fig.recorded_commit(self.doc, name)
            self.assertIsNotNone(commit, "%s: no 'Measured at COMMIT' line" % name)
            if inside:
                found = subprocess.run(["git", "-C", ROOT, "cat-file", "-e", commit + "^{commit}"],
                                       capture_output=True).returncode
                self.assertEqual(found, 0, "%s: commit %s not in the history" % (name, commit))

    def test_each_figure_measures_paths_that_exist(self):
        for f in self.fig.FIGURES:
            for p in f.paths:
                self.assertTrue(os.path.exists(os.path.join(ROOT, p)), "%s: %s" % (f.name, p))
            self.assertTrue(os.path.exists(os.path.join(ROOT, f.cmd[0])), f.cmd[0])

    def test_the_readme_headline_is_a_region_with_each_claim_once(self):
        with open(self.fig.README) as f:
            readme = f.read()
        b = readme.find("<!-- figures headline begin -->")
        e = readme.find("<!-- figures headline end -->")
        self.assertTrue(0 <= b < e, "README: no headline region")
        claims = [row.split(" | ")[0][2:] for row in readme[b:e].splitlines()
                  if row.startswith("| ") and not row.startswith("| claim")]
        self.assertEqual(len(claims), len(set(claims)))
        for f in self.fig.FIGURES:
            if f.headline is not None:
                claim = f.headline(["future / lru: geometric mean 0.5", "future / epoch: "
                                    "geometric mean 0.5"])
                if claim is not None:
                    self.assertIn(claim[0], claims, "%s's claim is not a README row" % f.name)

    def test_each_readme_headline_figure_is_its_tables(self):
        # A README figure is always the one its table gives: rebuilding the
        # rows from the tables as they stand changes nothing.
        with open(self.fig.README) as f:
            readme = f.read()
        b = readme.find("<!-- figures headline begin -->")
        e = readme.find("<!-- figures headline end -->")
        rows = {row.split(" | ")[0][2:]: row.split(" | ")[1]
                for row in readme[b:e].splitlines() if row.startswith("| ")}
        summaries = self.fig.table_summaries()
        for f in self.fig.FIGURES:
            if f.headline is not None and self.fig.region(self.doc, f.name) is not None:
                self.assertIn(f.name, summaries, "%s: its table gives no headline" % f.name)
        for name, (claim, figure) in summaries.items():
            self.assertEqual(rows.get(claim), figure,
                             "%s: the README's row differs from its table "
                             "(scripts/bench/figures --headline)" % name)

    def test_rewriting_a_region_keeps_the_rest(self):
        text = "a\n<!-- figure sim-grid begin -->\nold\n<!-- figure sim-grid end -->\nb\n"
        out = self.fig.replace_region(text, "sim-grid", "\nnew\n")
        self.assertEqual(out, "a\n<!-- figure sim-grid begin -->\nnew\n"
                              "<!-- figure sim-grid end -->\nb\n")


if __name__ == "__main__":
    unittest.main()
