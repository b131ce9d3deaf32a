#!/usr/bin/python3
"""The policy trace on a real mount: `-o trace.file=FILE` records what the
policy saw while a registered job (EpochfsSampler, one reader process) and a
reader no job claims read through the mount; `epochfs sim --replay FILE` then
gives the live run's own figures, equal to the daemon's stats; the policy that
ran, replayed, makes the same decisions (same hits, misses); Belady's replay
hits at least as often (the files are of one size); a damaged trace is refused
naming its line; a trace.file that cannot be created fails the mount. With
cache.weigh_hits the trace keeps every read's wait, and the replay decides as
the live run did; the job's hit_worth is below 1 (its one loader spends the
time between its reads not waiting), and exactly 1 without weighing. With
cache.request_bytes=auto over a store that waits 3 ms before each file's
first byte, then 50 us per KiB (faultfs), the daemon measures a request's
cost from its loads, gives it to the policy, shows it in stats and records
it; the replay decides as the live run did.
"""

import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs_test as et  # noqa: E402
import epochfs.sampler  # noqa: E402

KiB = 1024
FILES = 60
SIZE = 8 * KiB
EPOCHS = 3


def replay(trace, *args, check=True):
    p = subprocess.run([et.epochfs_bin(), "sim", "--replay", trace] + list(args),
                       capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError("epochfs sim --replay: exit %d\n%s" % (p.returncode, p.stderr))
    return p


class PolicyTraceTest(et.MountTestCase):
    def record(self, prefetch, weigh=False):
        """A sampler job and an unclaimed reader on a traced mount; returns
        (trace path, the daemon's stats at the end). Sets self.worth: the
        job's hit_worth after its second epoch."""
        lower = self.make_dir("lower")
        want = {}
        for i in range(FILES):
            want[i] = et.det_bytes(SIZE, 900 + i)
            et.write_file(os.path.join(lower, "data", "f%02d.bin" % i), want[i])
        other = et.det_bytes(SIZE, 7)
        et.write_file(os.path.join(lower, "other.bin"), other)
        trace = os.path.join(self.make_dir("out"), "policy.trace")
        # cache.prefetch=0 by default here: Belady's replay (which does not
        # prefetch) bounds the others' hits only without it.
        d = self.mount(lower, opts=["cache.policy=future", "cache.memory=%d" % (24 * SIZE),
                                    "cache.prefetch=%d" % prefetch, "trace.file=" + trace,
                                    "cache.weigh_hits=%s" % ("true" if weigh else "false")])
        self.assertEqual(os.stat(trace).st_mode & 0o777, 0o600)
        paths = [d.path("data", "f%02d.bin" % i) for i in range(FILES)]
        perms = {}
        for e in range(EPOCHS):
            perm = list(range(FILES))
            random.Random(40 + e).shuffle(perm)
            perms[e] = perm
        sampler = epochfs.sampler.EpochfsSampler(list(range(FILES)), d.mnt, "traced", paths, 4,
                                                 EPOCHS, order_fn=lambda e: perms[e],
                                                 compute_ms=0, strict=True)
        for epoch in range(EPOCHS):
            for k in sampler:
                self.assertEqual(et.read_file_raw(paths[k]), want[k], "epoch %d file %d" % (epoch, k))
            self.assertEqual(et.read_file_raw(d.path("other.bin")), other)  # nobody's
            if epoch == 1:
                with open(d.path(".epochfs", "jobs", "traced", "status")) as f:
                    self.worth = json.load(f)["hit_worth"]
        sampler.close()
        stats = d.stats()
        # Every read once: at once, loaded, joined (a prefetch in flight) or refilled.
        self.assertEqual(stats["hits"] + stats["misses"] + stats["coalesced"] + stats["refills"],
                         EPOCHS * (FILES + 1))
        self.assertGreater(stats["hits"], 0, stats)
        self.assertEqual(d.unmount(), 0)  # the rest of the trace is written at unmount
        return trace, stats

    def test_record_and_replay(self):
        trace, stats = self.record(prefetch=0)
        doc = json.loads(replay(trace, "--json").stdout)
        live = doc["trace"]
        self.assertEqual(live["policy"], "future")
        self.assertEqual(live["budget_bytes"], 24 * SIZE)
        self.assertEqual(live["jobs"], 1)
        self.assertEqual((live["hits"] - live["joined"] - live["refills"], live["misses"]),
                         (stats["hits"], stats["misses"]))
        runs = {r["policy"]: r for r in doc["replays"]}
        self.assertEqual(set(runs), {"none", "lru", "minio", "epoch", "future", "belady"})
        for r in runs.values():
            self.assertEqual(r["accesses"], live["accesses"], r)
        # The policy that ran decides as it did live.
        self.assertEqual((runs["future"]["hits"], runs["future"]["misses"]),
                         (live["hits"], live["misses"]), runs["future"])
        self.assertEqual(runs["none"]["hits"], 0)
        for p in ("lru", "minio", "epoch", "future"):
            self.assertGreaterEqual(runs["belady"]["hits"], runs[p]["hits"], p)
        table = replay(trace).stdout
        print("\n" + table)
        self.assertIn("live future", table)

        # A damaged trace: refused, naming the line.
        with open(trace) as f:
            lines = f.read().splitlines()
        bad = os.path.join(os.path.dirname(trace), "bad.trace")
        with open(bad, "w") as f:
            f.write("\n".join(lines[:3] + ['{"ev":"hit","o":1}'] + lines[3:]) + "\n")
        p = replay(bad, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("trace line 4: size: missing", p.stderr)
        p = subprocess.run([et.epochfs_bin(), "sim"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("give a WORKLOAD file or --replay TRACE", p.stderr)

    def test_a_run_with_prefetch_replays_to_its_decisions(self):
        """The prefetcher's loads are in the trace ("prefetch" events): the
        future policy replayed admits the same prefetches and gets the same
        hits as live, whatever the timing of the run."""
        trace, stats = self.record(prefetch=3)
        self.assertGreater(stats["prefetched"], 0, stats)
        doc = json.loads(replay(trace, "--json", "--policy", "future").stdout)
        live = doc["trace"]
        # The policy's hits include the reads that joined a prefetch and the
        # refills; the counters keep them apart (trace "served").
        self.assertEqual((live["hits"] - live["joined"] - live["refills"], live["misses"]),
                         (stats["hits"], stats["misses"]))
        self.assertEqual(live["joined"] + live["refills"], stats["coalesced"] + stats["refills"])
        # Every byte read from LOWER: the replay's live row agrees with stats.
        self.assertEqual(live["bytes_read"], stats["bytes_read_lower"], (live, stats))
        run = doc["replays"][0]
        self.assertEqual((run["hits"], run["misses"]), (live["hits"], live["misses"]), run)
        self.assertEqual(run["prefetched"], stats["prefetched"], run)

    def test_weighing_hits_replays_to_its_decisions(self):
        trace, stats = self.record(prefetch=0, weigh=True)
        # Between two reads the loader waits on nothing (the test's own
        # work): its share of time waiting is below 1 whatever the timing.
        self.assertLess(self.worth, 1.0)
        self.assertGreaterEqual(self.worth, 0.25)
        with open(trace) as f:
            events = [json.loads(line) for line in f]
        self.assertTrue(events[0]["weigh_hits"], events[0])
        misses = [e for e in events if e["ev"] == "miss"]
        self.assertTrue(misses)
        for e in misses:  # a reader waits at least for its load
            self.assertGreaterEqual(e.get("wait_ns", 0), e["load_ns"], e)
        doc = json.loads(replay(trace, "--json", "--policy", "future").stdout)
        live = doc["trace"]
        self.assertEqual((live["hits"] - live["joined"] - live["refills"], live["misses"]),
                         (stats["hits"], stats["misses"]))
        run = doc["replays"][0]
        self.assertEqual((run["hits"], run["misses"]), (live["hits"], live["misses"]), run)
        self.record(prefetch=0, weigh=False)
        self.assertEqual(self.worth, 1.0)

    def test_measured_request_cost_is_given_to_the_policy_and_traced(self):
        src = self.make_dir("src")
        want = {}
        for i in range(300):  # sizes vary: the cost is fitted against them
            want[i] = et.det_bytes(4 * KiB + (i * 1237) % (60 * KiB), 300 + i)
            et.write_file(os.path.join(src, "data", "f%03d.bin" % i), want[i])
        with open(os.path.join(src, ".delay_ms"), "w") as f:
            f.write("3")
        # And 50 us per KiB (up to 3.2 ms a file): without it a file's
        # transfer is a few microseconds, which a loaded machine's scheduling
        # noise hides, and the fit finds no size part (no estimate, or one
        # from noise).
        with open(os.path.join(src, ".delay_us_per_kib"), "w") as f:
            f.write("50")
        trace = os.path.join(self.make_dir("out"), "policy.trace")
        d = self.mount(self.mount_faultfs(src),
                       opts=["cache.policy=future", "cache.memory=%d" % (256 * KiB),
                             "cache.prefetch=0", "cache.request_bytes=auto",
                             "trace.file=" + trace])
        self.assertEqual(d.stats()["request_bytes"], 0)  # nothing measured yet
        # Two epochs; then more while no window of loads gave an estimate: on
        # a loaded machine a load can stall for a second, and a window with
        # such stalls gives none (RequestCost: durations that do not grow
        # with size). A bound for liveness; the counts below hold whatever
        # the number of epochs.
        epochs = 0
        while epochs < 2 or (d.stats()["request_bytes"] == 0 and epochs < 10):
            for i in range(300):
                self.assertEqual(et.read_file_raw(d.path("data", "f%03d.bin" % i)), want[i], i)
            epochs += 1
        stats = d.stats()
        self.assertGreaterEqual(stats["misses"], 256, stats)  # a window of loads at least
        # Each request waits 3 ms before its bytes, and one reader leaves the
        # store idle between them: a request costs more than its bytes.
        self.assertGreater(stats["request_bytes"], 0, stats)
        self.assertEqual(d.unmount(), 0)
        with open(trace) as f:
            events = [json.loads(line) for line in f]
        measured = [e["bytes"] for e in events if e["ev"] == "request_bytes"]
        self.assertTrue(measured, "no request_bytes event in the trace")
        self.assertEqual(measured[-1], stats["request_bytes"])
        doc = json.loads(replay(trace, "--json", "--policy", "future").stdout)
        live, run = doc["trace"], doc["replays"][0]
        # (the trace's, the daemon's)
        self.assertEqual((live["hits"] - live["joined"] - live["refills"], live["misses"]),
                         (stats["hits"], stats["misses"]), {"trace": live, "stats": stats})
        self.assertEqual((run["hits"], run["misses"]), (live["hits"], live["misses"]), run)

    def test_unwritable_trace_file_fails_the_mount(self):
        lower = self.make_dir("lower")
        et.write_file(os.path.join(lower, "a.bin"), b"x")
        missing = os.path.join(self.tmp, "no", "such", "dir", "t.trace")
        mnt = self.make_mountpoint()
        p = subprocess.run(self.epochfs_cmd(lower, mnt, ["trace.file=" + missing]),
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("trace.file " + missing, p.stderr)
        self.assertFalse(et.is_mounted(mnt))

    def refused(self, path, why):
        lower = self.make_dir("lower")
        et.write_file(os.path.join(lower, "a.bin"), b"x")
        mnt = self.make_mountpoint()
        p = subprocess.run(self.epochfs_cmd(lower, mnt, ["trace.file=" + path]),
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0, why)
        self.assertIn("trace.file " + path, p.stderr)
        self.assertIn(why, p.stderr)
        self.assertFalse(et.is_mounted(mnt))

    def test_a_trace_file_that_is_not_the_daemons_own_is_refused(self):
        # A file another user made first, where the docs' example puts it (a
        # sticky, world-writable directory): it would receive every job's
        # accesses. It is refused and left as it was.
        shared = self.make_dir("shared")
        os.chmod(shared, 0o1777)
        planted = os.path.join(shared, "run.trace")
        et.write_file(planted, b"planted\n")
        os.chown(planted, 65534, 65534)
        os.chmod(planted, 0o666)
        self.refused(planted, "not by the daemon's user")
        with open(planted, "rb") as f:
            self.assertEqual(f.read(), b"planted\n")
        # A FIFO would hang the mount at start; it fails it at once.
        fifo = os.path.join(shared, "fifo.trace")
        os.mkfifo(fifo)
        self.refused(fifo, "not a regular file")
        # A second name of another file.
        target = os.path.join(self.tmp, "target")
        et.write_file(target, b"keep\n")
        linked = os.path.join(shared, "linked.trace")
        os.link(target, linked)
        self.refused(linked, "other hard links")
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"keep\n")
        sym = os.path.join(shared, "sym.trace")
        os.symlink(target, sym)
        self.refused(sym, "symbolic link")

    def test_the_trace_stops_at_its_bound_and_replays(self):
        lower = self.make_dir("lower")
        for i in range(16):
            et.write_file(os.path.join(lower, "f%02d.bin" % i), et.det_bytes(512, i))
        trace = os.path.join(self.make_dir("out"), "t.trace")
        d = self.mount(lower, opts=["trace.file=" + trace, "trace.max_bytes=1MiB",
                                    "fuse.kernel_cache=false", "fuse.one_copy=false"])
        # Every open is an access the trace records (~100 bytes): well past 1 MiB.
        for n in range(16000):
            with open(d.path("f%02d.bin" % (n % 16)), "rb") as f:
                f.read(1)
        d.unmount()
        size = os.path.getsize(trace)
        self.assertLessEqual(size, 1 << 20)
        self.assertGreater(size, (1 << 20) - 4096)
        with open(trace, "rb") as f:
            self.assertTrue(f.read().endswith(b"\n"))
        self.assertIn("reached trace.max_bytes", d.stderr_text())
        p = replay(trace, "--json")
        self.assertGreater(json.loads(p.stdout)["trace"]["accesses"], 5000)


if __name__ == "__main__":
    et.main()
