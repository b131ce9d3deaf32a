#!/usr/bin/python3
"""scripts/bench/bench-jobs --smoke: the real-mount benchmark at tiny sizes (loop
device, blkio + memory cgroups, page cache / epochfs lru / epochfs epoch).
Its own checks must pass: every job reads every sample's bytes in every epoch
of every run, the daemon's lower reads cross the throttled device, the page
cache run reads at least the first epochs from the device, and the epoch
policy has hits after the warm-up. Also: it leaves no loop device or cgroup
behind; conf/sim/bench-jobs.toml is the workload the script writes, and
`epochfs sim` replays it (every policy, all accesses).

Exit 77 (SKIP) without /dev/fuse, root, cgroup v1 blkio/memory or losetup.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
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
    reason = et.skip_reason() or extra_skip_reason()
    if reason:
        print("SKIP: " + reason)
        sys.exit(et.SKIP_EXIT)
    unittest.main(verbosity=2)
