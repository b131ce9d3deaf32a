#!/usr/bin/python3
"""scripts/bench/bench-jobs --smoke: the real-mount benchmark at tiny sizes (loop
device, blkio + memory cgroups, page cache / epochfs lru / epochfs epoch).
Its own checks must pass: every job reads every sample's bytes in every epoch
of every run, the daemon's lower reads cross the throttled device, the page
cache run reads at least the first epochs from the device, and the epoch
policy has hits after the warm-up. Also: it leaves no loop device or cgroup
behind; conf/sim/bench-jobs.toml is the workload the script writes, and
`epochfs sim` replays it (every policy, all accesses). And latencyfs, the
latency store of scripts/bench/bench-slow-store (tests/bench/latencyfs.cc):
byte-exact passthrough, every call waits, calls counted by kind, many calls
waiting at once.

Exit 77 (SKIP) without /dev/fuse or root; the bench-jobs tests are skipped
without cgroup v1 blkio/memory or losetup.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import epochfs_test as et

SCRIPT = os.path.join(et.REPO, "scripts", "bench", "bench-jobs")


def extra_skip_reason():
    for path in ("/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device",
                 "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        if not os.path.exists(path):
            return "no cgroup v1 %s" % path
    for tool in ("losetup", "mkfs.ext4"):
        if not shutil.which(tool):
            return "%s not found" % tool
    return None


def leftovers():
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    out = [line for line in loops.splitlines() if "epochfs-bench-jobs" in line]
    for root in ("/sys/fs/cgroup/blkio", "/sys/fs/cgroup/memory"):
        out += [os.path.join(root, d) for d in os.listdir(root)
                if d.startswith("epochfs-bench-jobs.")]
    return out


class LatencyfsSmoke(unittest.TestCase):
    """A few calls through latencyfs, in seconds: what bench-slow-store relies on."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="latencyfs-smoke.")
        self.src = os.path.join(self.tmp, "src")
        self.mnt = os.path.join(self.tmp, "mnt")
        os.makedirs(self.mnt)
        self.data = et.det_bytes(300 * 1024 + 7, 5)
        et.write_file(os.path.join(self.src, "d", "a.bin"), self.data)
        for i in range(8):
            et.write_file(os.path.join(self.src, "d", "f%d" % i), b"%d" % i)
        os.symlink("d/a.bin", os.path.join(self.src, "link"))
        self.latency(50)
        binary = et.latencyfs_bin()
        self.assertTrue(os.access(binary, os.X_OK), "no latencyfs at %s (LATENCYFS_BIN)" % binary)
        self.proc = subprocess.Popen([binary, self.src, self.mnt, "-f", "-o", "allow_other"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.addCleanup(self.stop)
        self.assertTrue(et.wait_for(lambda: et.is_mounted(self.mnt) or self.proc.poll() is not None,
                                    10) and self.proc.poll() is None, "latencyfs did not mount")

    def stop(self):
        et.force_unmount(self.mnt)
        try:
            self.proc.wait(10 * et.TIME_SCALE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def latency(self, ms):
        with open(os.path.join(self.src, ".latency_ms"), "w") as f:
            f.write("%d\n" % ms if ms else "")

    def counts(self, pid=None):
        name = "user.faultfs.counts" + ("" if pid is None else ".%d" % pid)
        text = os.getxattr(self.mnt, name).decode()
        return dict((k, int(v)) for k, v in (kv.split("=") for kv in text.split()))

    def test_passthrough_waits_and_counts(self):
        """Bytes, listings and links as SOURCE's; a call takes at least the
        latency; each kind counted, for this process too."""
        t0 = time.monotonic()
        os.stat(os.path.join(self.mnt, "d", "a.bin"))
        self.assertGreaterEqual(time.monotonic() - t0, 0.05)  # a lookup (d) waited, at least
        self.assertEqual(et.read_file(os.path.join(self.mnt, "d", "a.bin")), self.data)
        self.assertEqual(sorted(os.listdir(os.path.join(self.mnt, "d"))),
                         ["a.bin"] + ["f%d" % i for i in range(8)])
        self.assertEqual(os.readlink(os.path.join(self.mnt, "link")), "d/a.bin")
        with self.assertRaises(FileNotFoundError):
            os.stat(os.path.join(self.mnt, "d", "none"))
        with self.assertRaises(OSError):
            open(os.path.join(self.mnt, "d", "f0"), "wb")  # read-only
        mine = self.counts(os.getpid())
        for kind in ("lookup", "stat", "open", "opendir", "list", "readlink"):
            self.assertGreaterEqual(mine[kind], 1, kind)
        self.assertGreaterEqual(mine["read"], 1)
        self.assertEqual(mine["in_flight"], 0)
        self.latency(0)  # no latency: answered at once, counted all the same
        n = self.counts()["stat"]
        os.stat(os.path.join(self.mnt, "d", "a.bin"))
        self.assertGreater(self.counts()["stat"], n)

    def test_calls_wait_side_by_side(self):
        """Calls wait without a thread each: 8 threads stat 8 names never
        looked up, in one directory, until all 8 calls are seen waiting at
        once (the counts' in_flight; lookups of new names included)."""
        self.latency(200)
        stop = threading.Event()

        def statter(i):
            while not stop.is_set():
                os.stat(os.path.join(self.mnt, "d", "f%d" % i))
        threads = [threading.Thread(target=statter, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        try:
            seen = et.wait_for(lambda: self.counts()["in_flight"] >= 8, 30, interval=0.01)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertTrue(seen, self.counts())
        self.assertGreaterEqual(self.counts()["max_in_flight"], 8)


@unittest.skipIf(extra_skip_reason(), extra_skip_reason())
class BenchSmoke(unittest.TestCase):
    def test_sim_workload_in_sync(self):
        """conf/sim/bench-jobs.toml and conf/sim/shards.toml are what the
        benchmark runs (default and --workload shards), and the simulator
        takes them."""
        for workload, name in (("jobs", "bench-jobs.toml"), ("shards", "shards.toml")):
            out = os.path.join(tempfile.mkdtemp(prefix="bench-smoke."), "w.toml")
            subprocess.run([SCRIPT, "--workload", workload, "--write-toml", out], check=True,
                           capture_output=True)
            with open(out) as f, open(os.path.join(et.REPO, "conf", "sim", name)) as g:
                self.assertEqual(f.read(), g.read(), "regenerate: scripts/bench/bench-jobs --workload "
                                 "%s --write-toml conf/sim/%s" % (workload, name))
            shutil.rmtree(os.path.dirname(out))
        r = subprocess.run([et.epochfs_bin(), "sim", os.path.join(et.REPO, "conf", "sim",
                                                                  "bench-jobs.toml"), "--json"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        runs = {x["policy"]: x for x in json.loads(r.stdout)["runs"]}
        self.assertEqual(set(runs), {"none", "lru", "minio", "epoch", "future", "belady"})
        for x in runs.values():  # 3 jobs: 600*4 + 300*3 + 800*4 accesses
            self.assertEqual(x["accesses"], 2400 + 900 + 3200)
        self.assertLessEqual(runs["belady"]["total_stall_s"], runs["lru"]["total_stall_s"])
        for p in ("lru", "minio", "epoch"):  # docs/future_policy.md, this workload at 40 %
            self.assertLess(runs["future"]["total_stall_s"], runs[p]["total_stall_s"], p)

    def test_smoke(self):
        before = leftovers()
        r = subprocess.run([SCRIPT, "--smoke", "--epochfs", et.epochfs_bin()],
                           capture_output=True, text=True, timeout=240)
        sys.stdout.write(r.stdout[-6000:])
        sys.stderr.write(r.stderr[-3000:])
        self.assertEqual(r.returncode, 0, "bench-jobs --smoke failed")
        self.assertIn("smoke: ok", r.stdout)
        for run in ("== page cache:", "== epochfs lru:", "== epochfs epoch:"):
            self.assertIn(run, r.stdout)
        self.assertEqual(leftovers(), before)

    def test_smoke_shards(self):
        """--workload shards: one job over shard files read whole in a
        declared, shuffled order (WebDataset-style); the smoke's checks: every
        shard's bytes in every epoch of every run, and hits after the warm-up
        under the epoch and future policies (the job's status)."""
        before = leftovers()
        r = subprocess.run([SCRIPT, "--smoke", "--workload", "shards", "--epochfs",
                            et.epochfs_bin()],
                           capture_output=True, text=True, timeout=240)
        sys.stdout.write(r.stdout[-6000:])
        sys.stderr.write(r.stderr[-3000:])
        self.assertEqual(r.returncode, 0, "bench-jobs --smoke --workload shards failed")
        self.assertIn("smoke: ok", r.stdout)
        self.assertEqual(leftovers(), before)


if __name__ == "__main__":
    reason = et.skip_reason()
    if reason:
        print("SKIP: " + reason)
        sys.exit(et.SKIP_EXIT)
    unittest.main(verbosity=2)
