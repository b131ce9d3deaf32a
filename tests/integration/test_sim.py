"""`epochfs sim` end to end: the built binary on the shipped workloads.

Runs conf/sim/*.toml through the binary with --json and checks that the JSON
parses and its numbers agree (hits + misses = accesses, per-epoch sums, stall
within epoch time, makespan from the jobs' times, budget from the workload),
that a second run prints the same bytes, that the table names every policy,
and that a bad workload fails with the key and line; --orders prints the sizes
and epoch orders a mount can replay. No mount: suite 'unit'.
The ImageNet-scale workload runs with --policy none only (seconds, not minutes),
and not in a sanitizer tree (EPOCHFS_SANITIZE, from meson's b_sanitize): there its
38 million accesses take minutes and reach no code the small workloads do not.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONF = os.path.join(REPO, "conf", "sim")
POLICIES = ["none", "lru", "minio", "epoch", "future", "belady"]


def epochfs_bin():
    return os.environ.get("EPOCHFS_BIN") or os.path.join(REPO, "build", "src", "epochfs")


def sim(*args, check=True):
    p = subprocess.run([epochfs_bin(), "sim", *args], capture_output=True, text=True,
                       timeout=600)
    if check and p.returncode != 0:
        raise AssertionError("epochfs sim %s: exit %d: %s" % (args, p.returncode, p.stderr))
    return p


class SimTest(unittest.TestCase):
    def check_doc(self, doc, policies):
        wl = doc["workload"]
        self.assertEqual([r["policy"] for r in doc["runs"]], policies)
        for run in doc["runs"]:
            name = run["policy"]
            self.assertEqual(len(run["jobs"]), len(wl["jobs"]))
            totals = {"accesses": 0, "hits": 0, "misses": 0, "bytes_read": 0, "stall_ns": 0}
            first, last = None, 0
            for job, spec in zip(run["jobs"], wl["jobs"]):
                self.assertEqual(job["name"], spec["name"])
                # Per epoch: every sample, or a rank's (padded) shard.
                ranks = spec.get("ranks", 1)
                reads = -(-spec["samples"] // ranks)
                self.assertEqual(job["accesses"], reads * spec["epochs"], name)
                self.assertEqual(job["hits"] + job["misses"], job["accesses"], name)
                # Joining a load in flight (a reader's or a prefetch's) is a
                # miss: the reader waited for storage.
                self.assertLessEqual(job["coalesced"], job["misses"])
                self.assertEqual(len(job["epochs"]), spec["epochs"])
                start = job["start_ns"]
                self.assertEqual(start, round(spec["start_s"] * 1e9))
                for ep in job["epochs"]:
                    self.assertEqual(ep["hits"] + ep["misses"], reads)
                    self.assertEqual(ep["start_ns"], start)
                    self.assertLessEqual(ep["stall_ns"], ep["time_ns"])
                    start += ep["time_ns"]
                self.assertEqual(job["completion_ns"], start)
                self.assertEqual(sum(e["hits"] for e in job["epochs"]), job["hits"])
                self.assertEqual(sum(e["stall_ns"] for e in job["epochs"]), job["stall_ns"])
                self.assertAlmostEqual(job["hit_ratio"], job["hits"] / job["accesses"])
                if name == "none":
                    self.assertEqual(job["hits"], 0)
                for k in totals:
                    totals[k] += job[k]
                first = job["start_ns"] if first is None else min(first, job["start_ns"])
                last = max(last, job["completion_ns"])
            for k in ("accesses", "hits", "misses"):
                self.assertEqual(run[k], totals[k], name + " " + k)
            self.assertEqual(run["bytes_read"], totals["bytes_read"] + run["prefetch_bytes"], name)
            self.assertLessEqual(run["prefetch_hits"] + run["prefetch_wasted"], run["prefetched"])
            if name != "future" or wl["prefetch"] == 0:
                self.assertEqual(run["prefetch_bytes"], 0, name)
            self.assertEqual(run["total_stall_ns"], totals["stall_ns"])
            self.assertEqual(run["makespan_ns"], last - first)
            self.assertLessEqual(run["max_resident_bytes"], wl["budget_bytes"])
            if name in ("none", "minio"):
                self.assertEqual(run["evictions"], 0)
        return {r["policy"]: r for r in doc["runs"]}

    def test_small_three_jobs_and_ranks(self):
        for f in ("small.toml", "three_jobs.toml", "ranks.toml"):
            path = os.path.join(CONF, f)
            out = sim(path, "--json").stdout
            runs = self.check_doc(json.loads(out), POLICIES)
            # Belady is the bound on these workloads; no cache the floor.
            for p in POLICIES:
                if p != "future":  # it spreads its hits: may beat the heuristic's count
                    self.assertGreaterEqual(runs["belady"]["hits"], runs[p]["hits"], f + " " + p)
                self.assertLessEqual(runs["none"]["hits"], runs[p]["hits"])
            # The future policy waits no longer than the others (docs/policy.md),
            # and within 10 % of the bound.
            for p in ("lru", "minio", "epoch"):
                self.assertLessEqual(runs["future"]["total_stall_ns"],
                                     runs[p]["total_stall_ns"] * 1.005, f + " " + p)
            self.assertLessEqual(runs["future"]["total_stall_ns"],
                                 runs["belady"]["total_stall_ns"] * 1.10, f)
            self.assertEqual(sim(path, "--json", "-j", "1").stdout, out, "not deterministic")
            other = sim(path, "--json", "--seed", "2").stdout
            self.assertNotEqual(other, out)
            self.assertEqual(json.loads(other)["workload"]["seed"], 2)

    def test_prefetch_on_a_latency_bound_store(self):
        """conf/sim/object_store.toml: with prefetch, the future policy's
        stall is far below every policy's without it (Belady's included);
        --prefetch 0 turns it off."""
        path = os.path.join(CONF, "object_store.toml")
        runs = self.check_doc(json.loads(sim(path, "--json").stdout), POLICIES)
        self.assertGreater(runs["future"]["prefetched"], 0)
        off = self.check_doc(json.loads(sim(path, "--json", "--prefetch", "0").stdout), POLICIES)
        self.assertEqual(off["future"]["prefetched"], 0)
        for p in POLICIES:
            self.assertLess(runs["future"]["total_stall_ns"] * 4, off[p]["total_stall_ns"], p)
        p = sim(path, "--prefetch", "65", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--prefetch", p.stderr)

    def test_shards(self):
        """conf/sim/shards.toml (scripts/bench/bench-jobs --workload shards): 64
        shards of 16 MiB read whole in a shuffled order, half of them fitting.
        The epoch policy and MinIO keep a fixed half (0.5 hits per epoch after
        the first); the future policy, prefetching into the space its reads
        free, stalls less than every other policy, Belady's (no prefetch)
        included."""
        runs = self.check_doc(json.loads(sim(os.path.join(CONF, "shards.toml"),
                                             "--json").stdout), POLICIES)
        for p in ("epoch", "minio"):
            hits = [e["hits"] for e in runs[p]["jobs"][0]["epochs"]]
            self.assertEqual(hits, [0, 32, 32, 32], p)
        for p in ("none", "lru", "minio", "epoch", "belady"):
            self.assertLess(runs["future"]["total_stall_ns"], runs[p]["total_stall_ns"], p)

    def test_orders(self):
        """--orders: what scripts/bench/bench-jobs --workload shards_small
        declares on a mount, shards_small.toml's 32 sizes and one permutation
        per epoch, the same for a seed and other for another; no simulation."""
        path = os.path.join(CONF, "shards_small.toml")
        doc = json.loads(sim(path, "--orders").stdout)
        self.assertEqual(doc["budget_bytes"], 128 << 20)
        (job,) = doc["jobs"]
        self.assertEqual(job["name"], "shards32")
        self.assertEqual(job["sizes"], [8 << 20] * 32)
        self.assertEqual(len(job["orders"]), 4)
        for order in job["orders"]:
            self.assertEqual(sorted(order), list(range(32)))
        self.assertEqual(len({tuple(o) for o in job["orders"]}), 4)
        self.assertEqual(sim(path, "--orders").stdout, json.dumps(doc, separators=(",", ":")) + "\n")
        other = json.loads(sim(path, "--orders", "--seed", "2").stdout)
        self.assertNotEqual(other["jobs"][0]["orders"], job["orders"])
        p = sim("--replay", path, "--orders", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--orders", p.stderr)

    def test_budget_percent(self):
        doc = json.loads(sim(os.path.join(CONF, "three_jobs.toml"), "--json", "--policy",
                             "minio").stdout)
        wl = doc["workload"]
        self.assertEqual(wl["budget_bytes"], int(wl["distinct_bytes"] * 0.4))
        doc = json.loads(sim(os.path.join(CONF, "three_jobs.toml"), "--json", "--policy",
                             "minio", "--budget-percent", "20").stdout)
        self.assertEqual(doc["workload"]["budget_bytes"], int(wl["distinct_bytes"] * 0.2))
        p = sim(os.path.join(CONF, "small.toml"), "--budget-percent", "0", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--budget-percent", p.stderr)

    def test_table(self):
        out = sim(os.path.join(CONF, "small.toml")).stdout
        for p in POLICIES:
            self.assertIn("\n" + p + " ", out)
        self.assertIn("makespan_s", out)

    @unittest.skipIf(os.environ.get("EPOCHFS_SANITIZE", "none") != "none",
                     "minutes under a sanitizer; the small workloads cover the same code")
    def test_imagenet_scale_no_cache(self):
        doc = json.loads(sim(os.path.join(CONF, "imagenet.toml"), "--json", "--policy",
                             "none").stdout)
        runs = self.check_doc(doc, ["none"])
        self.assertEqual(runs["none"]["accesses"], 3 * 10 * 1281167)

    def test_errors(self):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write('budget = "1GiB"\n[storage]\nbandwidth = "1MiB"\n[[job]]\nname = "a"\n'
                    'samples = 10\nsize = "big"\nbatch_size = 1\nepochs = 1\n')
        try:
            p = sim(f.name, check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn("job[0].size (line 7)", p.stderr)
            self.assertEqual(p.stdout, "")
        finally:
            os.unlink(f.name)
        p = sim(os.path.join(CONF, "small.toml"), "--policy", "fifo", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("unknown policy 'fifo'", p.stderr)
        p = sim("/nonexistent.toml", check=False)
        self.assertEqual(p.returncode, 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
