#!/usr/bin/python3
"""Orphaned jobs and their re-attach, with real processes (seed 004; epochfs-control(7)).

A job is a process (forked by the test) that registers itself with mkdir and
forks loader processes (attributed by ancestry) which read its declared orders
batch by batch, comparing every byte with LOWER (test_jobs.loader_main). The
test drives it epoch by epoch through a pipe.

ReattachTest: epoch 0 (warm-up) and part of epoch 1 run; then the loaders and
the main process are SIGKILLed mid-epoch. The job shows `orphaned` with its
cache kept. A new job process comes back under the same name (mkdir: EEXIST;
its first write re-attaches the job: same id, state back), re-declares config,
samples and orders as a restarted job does, and reads epoch 1 again from its start without an epoch marker: the
re-reads count for epoch 1 (not 2), they hit the samples kept in `next`, and
epoch 2 then hits every sample from the kept cache. Byte-exact throughout; the
budget equation holds at every step; rmdir returns everything.

BoundaryRestartTest: killed between epochs 1 and 2; the restarted job writes
`epoch` 2 and every read of epoch 2 hits the kept cache.

GraceTest: the same crash, nobody re-registers: after jobs.orphan_grace=2 the
job directory is gone, the pool has every byte back, the name is free (a new
mkdir is a new job). The cache-need estimate is in status and stats.

KernelForgetsReapedDirectoryTest: the reaped directory is dropped from the
kernel (FUSE_NOTIFY_DELETE), which forgets its inode.

NeedWarningTest: one job whose measured need exceeds the budget: stats
`warnings` says so and the daemon logs the warning once.

Standard library only; exit 77 (SKIP) without /dev/fuse or root.
"""

import ctypes
import errno
import json
import os
import signal
import time
import traceback

import epochfs_test as et
import test_jobs as tj

KiB = 1024
MiB = 1024 * KiB
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Killed loaders (children of the killed job process) are reparented to
    the test, which then reaps them: no zombie outlives the test."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False


def reap(pid, timeout=10.0 * et.TIME_SCALE):
    """Waits for `pid` to be gone: waitpid when it is (or became) our child,
    else until /proc no longer shows it running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return True
        except ChildProcessError:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        return True
            except OSError:
                return True
        time.sleep(0.02)
    return False


def job_child(mnt, spec, samples, orders, first_epoch, cmd_fd, rep_fd):
    """The job's main process: registers (or re-attaches), declares config,
    samples and the orders of first_epoch and first_epoch + 1, forks its
    loaders, then runs the epochs the test asks for ("E k marker"), declaring
    order k+1 as it goes; "Q" stops the loaders. Replies one JSON line per
    command."""
    out = os.fdopen(rep_fd, "w", buffering=1)
    cmds = os.fdopen(cmd_fd, "r")
    jd = os.path.join(mnt, ".epochfs", "jobs", spec.name)
    loaders = []

    def reply(obj):
        out.write(json.dumps(obj) + "\n")

    try:
        existed = False
        try:
            os.mkdir(jd)
        except FileExistsError:  # a restarted job: its first write re-attaches it
            existed = True
        tj.ctl_write(os.path.join(jd, "config"),
                     'batch_size = %d\nepochs = %d\nroot = "%s"\nloaders = %d\ncompute_ms = 0\n'
                     % (spec.batch, spec.epochs, spec.subdir, spec.workers))
        tj.ctl_write(os.path.join(jd, "samples"), "".join(rel + "\n" for rel, _ in samples))
        for k in (first_epoch, first_epoch + 1):
            if k < spec.epochs:
                tj.ctl_write(os.path.join(jd, "order", str(k)),
                             " ".join(map(str, orders[k])) + "\n")
        loaders = et.fork_loaders(
            spec.workers, lambda w, cr, rw: tj.loader_main(spec, mnt, samples, orders, w, cr, rw),
            in_child=out.close)
        reply({"pid": os.getpid(), "loaders": [p for p, _, _ in loaders], "existed": existed,
               "status": tj.read_json(os.path.join(jd, "status"))})
        for line in cmds:
            parts = line.split()
            if not parts or parts[0] == "Q":
                break
            k, marker = int(parts[1]), parts[2] == "1"
            if marker:
                tj.ctl_write(os.path.join(jd, "epoch"), "%d\n" % k)
            if k + 1 < spec.epochs:
                tj.ctl_write(os.path.join(jd, "order", str(k + 1)),
                             " ".join(map(str, orders[k + 1])) + "\n")
            opens, bad = 0, []
            for rep in et.loader_epoch(loaders, k):
                opens += rep["opens"]
                bad += rep["bad"]
            reply({"epoch": k, "opens": opens, "bad": bad,
                   "status": tj.read_json(os.path.join(jd, "status"))})
        et.stop_loaders(loaders)
        reply({"quit": True})
    except BaseException:
        try:
            reply({"error": traceback.format_exc()})
        except BaseException:
            pass  # the test is gone
        et.kill_loaders(loaders)
        os._exit(2)
    os._exit(0)


class Job:
    """The test's handle on one job process."""

    def __init__(self, test, mnt, spec, samples, orders, first_epoch):
        cr, cw = os.pipe()
        rr, rw = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(cw)
                os.close(rr)
                job_child(mnt, spec, samples, orders, first_epoch, cr, rw)
            finally:
                os._exit(3)  # never return into the test runner
        os.close(cr)
        os.close(rw)
        self.test, self.pid = test, pid
        self.cmd = os.fdopen(cw, "w", buffering=1)
        self.rep = os.fdopen(rr, "r")
        self.loaders = []
        test.addCleanup(self.kill_quietly)
        hello = self.read()
        self.loaders = hello["loaders"]
        self.existed = hello["existed"]
        self.first_status = hello["status"]

    def read(self):
        line = self.rep.readline()
        self.test.assertTrue(line, "the job process died")
        obj = json.loads(line)
        self.test.assertNotIn("error", obj, obj.get("error"))
        return obj

    def start_epoch(self, k, marker):
        self.cmd.write("E %d %d\n" % (k, 1 if marker else 0))

    def epoch(self, k, marker):
        self.start_epoch(k, marker)
        r = self.read()
        self.test.assertEqual(r["bad"], [], "data differs from LOWER")
        return r

    def quit(self):
        self.cmd.write("Q\n")
        self.read()
        _, status = os.waitpid(self.pid, 0)
        self.pid, self.loaders = None, []  # gone: never signal these numbers again
        self.test.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.close()

    def kill_all(self):
        """SIGKILL the loaders, then the main process: no rmdir, nothing
        flushed, mid-epoch."""
        for p in self.loaders:
            os.kill(p, signal.SIGKILL)
        os.kill(self.pid, signal.SIGKILL)
        self.test.assertTrue(reap(self.pid), "job process not reaped")
        for p in self.loaders:
            self.test.assertTrue(reap(p), "loader %d not reaped" % p)
        self.pid, self.loaders = None, []
        self.close()

    def kill_quietly(self):
        """Cleanup after a failed test: no process outlives it."""
        pids = [p for p in [self.pid] + self.loaders if p is not None]
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        for p in pids:
            reap(p, timeout=2.0 * et.TIME_SCALE)
        self.pid, self.loaders = None, []
        self.close()

    def close(self):
        for f in (self.cmd, self.rep):
            try:
                f.close()
            except OSError:
                pass


class OrphanCase(et.MountTestCase):
    # name, subdir, n, sizes, batch, epochs, workers, compute per batch, shard, epoch file, seed
    SPEC = tj.JobSpec("resnet", "ds", 48, 2 * KiB, 8 * KiB, 4, 4, 2, 0.1, 1.0, True, 11)

    def setUp(self):
        super().setUp()
        become_subreaper()
        self.lower = self.make_dir("lower")
        self.samples = tj.build_dataset(self.lower, self.SPEC.subdir, self.SPEC.n,
                                        self.SPEC.size_lo, self.SPEC.size_hi, seed=11)
        self.orders = self.SPEC.orders()

    def jp(self, *rel):
        return self.d.path(".epochfs", "jobs", self.SPEC.name, *rel)

    def status(self):
        return tj.read_json(self.jp("status"))

    def assert_budget(self):
        self.assertIsNone(tj.budget_violation(self.d.stats()))

    def crash_mid_epoch_one(self, at_batch):
        """Runs epoch 0 (warm-up) and epoch 1 up to batch `at_batch`, then
        kills every process of the job. Returns the job's status at the kill."""
        job = Job(self, self.d.mnt, self.SPEC, self.samples, self.orders, 0)
        r0 = job.epoch(0, marker=True)
        self.assertEqual(r0["opens"], self.SPEC.n)
        job.start_epoch(1, marker=True)
        # Mid-epoch: batches of epoch 1 consumed, `next` filling.
        self.assertTrue(et.wait_for(
            lambda: self.status()["epoch"] == 1 and self.status()["batch"] >= at_batch, 20,
            interval=0.01), self.status())
        job.kill_all()
        st = self.status()
        self.assertLess(st["batch"], self.SPEC.n // self.SPEC.batch, "epoch 1 ended before the kill")
        return st

    def wait_orphaned(self):
        self.assertTrue(et.wait_for(lambda: self.status()["orphaned"], 5), self.status())
        st = self.status()
        self.assertEqual(st["state"], "orphaned")
        self.assertIn("orphaned_for_s", st)
        return st


class ReattachTest(OrphanCase):
    def test_killed_job_reattaches_warm(self):
        self.d = self.mount(self.lower, opts=["cache.policy=epoch", "cache.memory=4MiB",
                                              "jobs.orphan_grace=60"])
        # Killed late in epoch 1: within a read-ahead window of its end, so
        # that a re-read would begin epoch 2 unless the epoch restarts.
        at_kill = self.crash_mid_epoch_one(at_batch=9)
        self.assertEqual(at_kill["state"], "caching")
        kept_next = at_kill["next_bytes"]
        self.assertGreater(kept_next, 0, at_kill)
        orph = self.wait_orphaned()
        self.assertEqual(orph["next_bytes"], kept_next)  # the cache is kept
        self.assertEqual(orph["reattached"], 0)
        self.assert_budget()
        # The log says so (one line per job event, at info).
        name = self.SPEC.name
        self.assertIn('job "%s" (mkdir by uid 0' % name, self.d.stderr_text())
        self.assertTrue(et.wait_for(lambda: "job %s: every process exited; orphaned, its cache "
                                            "kept for 60 s" % name in self.d.stderr_text(), 10),
                        self.d.stderr_text())

        # The restarted job: new processes, same name. mkdir finds the name
        # taken (EEXIST); the first write (config) re-attaches the job.
        job = Job(self, self.d.mnt, self.SPEC, self.samples, self.orders, 1)
        self.assertTrue(job.existed)
        st = job.first_status
        self.assertEqual(st["id"], at_kill["id"])
        self.assertEqual(st["reattached"], 1)
        self.assertFalse(st["orphaned"])
        self.assertNotIn("orphaned_for_s", st)
        self.assertEqual(st["state"], "caching")
        self.assertEqual(st["epoch"], 1)
        self.assertEqual(st["batch"], 0)  # epoch 1 restarts
        self.assertEqual(st["next_bytes"], kept_next)
        self.assertEqual(st["pids"], [job.pid])  # the dead pids are forgotten
        self.assertEqual(st["declared_epochs"], [1, 2])
        self.assertEqual(st["last_error"], "", st)
        self.assert_budget()

        # Epoch 1 again from its start, no marker: the re-reads count for
        # epoch 1 and hit what the crashed run put in `next`.
        r1 = job.epoch(1, marker=False)
        self.assertEqual(r1["opens"], self.SPEC.n)
        st = r1["status"]
        self.assertEqual(st["epoch"], 1, "restarted epoch 1 was taken for epoch 2: %r" % st)
        e1 = [e for e in st["epochs"] if e["epoch"] == 1]
        self.assertEqual(len(e1), 1, st["epochs"])
        self.assertGreater(e1[0]["hits"], 0, st)
        self.assertEqual(st["next_bytes"], sum(len(b) for _, b in self.samples), st)
        self.assert_budget()

        # Epoch 2: every sample from the kept cache.
        r2 = job.epoch(2, marker=True)
        e2 = [{k: e[k] for k in ("epoch", "hits", "misses", "coalesced", "refills")}
              for e in r2["status"]["epochs"] if e["epoch"] == 2]
        self.assertEqual(e2, [{"epoch": 2, "hits": self.SPEC.n, "misses": 0, "coalesced": 0,
                               "refills": 0}], r2["status"])
        self.assert_budget()
        job.quit()
        os.rmdir(self.jp())
        log = self.d.stderr_text()
        self.assertIn("re-attached", log)
        self.assertIn('job "%s" (rmdir by uid 0): ended, its cache released' % name, log)
        self.assertEqual(log.count("orphaned, its cache kept"), 1, log)
        st = self.d.stats()
        self.assertEqual(st["jobs"], [])
        self.assertEqual(st["pool"] + st["shared"], st["budget"], st)
        self.assertEqual(self.d.unmount(), 0)


class BoundaryRestartTest(OrphanCase):
    def test_job_killed_between_epochs_resumes_at_the_next_one(self):
        """Killed after epoch 1 was read whole (a checkpoint at its end): the
        restarted job writes `epoch` 2 and finds every sample in `cur`."""
        self.d = self.mount(self.lower, opts=["cache.policy=epoch", "cache.memory=4MiB",
                                              "jobs.orphan_grace=60"])
        job = Job(self, self.d.mnt, self.SPEC, self.samples, self.orders, 0)
        job.epoch(0, marker=True)
        r1 = job.epoch(1, marker=True)
        total = sum(len(b) for _, b in self.samples)
        self.assertEqual(r1["status"]["next_bytes"], total)
        job.kill_all()
        self.wait_orphaned()
        job = Job(self, self.d.mnt, self.SPEC, self.samples, self.orders, 2)
        st = job.first_status
        self.assertEqual(st["reattached"], 1)
        self.assertEqual(st["epoch"], 1)
        self.assertEqual(st["next_bytes"], total)
        r2 = job.epoch(2, marker=True)
        self.assertEqual(r2["status"]["epoch"], 2)
        e2 = [{k: e[k] for k in ("epoch", "hits", "misses", "coalesced", "refills")}
              for e in r2["status"]["epochs"] if e["epoch"] == 2]
        self.assertEqual(e2, [{"epoch": 2, "hits": self.SPEC.n, "misses": 0, "coalesced": 0,
                               "refills": 0}], r2["status"])
        self.assert_budget()
        job.quit()
        os.rmdir(self.jp())
        st = self.d.stats()
        self.assertEqual(st["pool"] + st["shared"], st["budget"], st)
        self.assertEqual(self.d.unmount(), 0)


class GraceTest(OrphanCase):
    def test_unclaimed_orphan_returns_its_space_after_the_grace(self):
        self.d = self.mount(self.lower, opts=["cache.policy=epoch", "cache.memory=4MiB",
                                              "jobs.orphan_grace=2"])
        at_kill = self.crash_mid_epoch_one(at_batch=3)
        # The cache-need estimate from the warm-up, with its inputs.
        need = at_kill["cache_need"]
        self.assertTrue(need["measured"])
        self.assertEqual(need["e"], self.SPEC.batch)  # compute_ms = 0: every sample wanted
        self.assertEqual(need["batches"], self.SPEC.n // self.SPEC.batch)
        self.assertEqual(at_kill["cache_need_bytes"],
                         need["e"] * need["batches"] * need["mean_sample_bytes"])
        stats = self.d.stats()
        self.assertEqual(stats["need_total_bytes"], at_kill["cache_need_bytes"])
        self.assertEqual(stats["warnings"], [])
        self.assertEqual(stats["jobs"][0]["cache_need_bytes"], at_kill["cache_need_bytes"])

        orph = self.wait_orphaned()
        self.assertGreater(orph["cur_bytes"] + orph["next_bytes"] + orph["tail_bytes"], 0, orph)
        self.assert_budget()
        self.assertTrue(et.wait_for(lambda: not os.path.exists(self.jp()), 10),
                        "orphan not reaped")
        stats = self.d.stats()
        self.assertEqual(stats["jobs"], [])
        self.assertEqual(stats["pool"] + stats["shared"], stats["budget"], stats)
        self.assertEqual(stats["need_total_bytes"], 0)
        self.assertIsNone(tj.budget_violation(stats))
        self.assertNotIn(self.SPEC.name, os.listdir(self.d.path(".epochfs", "jobs")))
        # The name is free: mkdir makes a new job.
        os.mkdir(self.jp())
        st = self.status()
        self.assertNotEqual(st["id"], at_kill["id"])
        self.assertEqual(st["reattached"], 0)
        self.assertEqual(st["state"], "registered")
        os.rmdir(self.jp())
        self.assertIn("orphan grace over", self.d.stderr_text())
        self.assertEqual(self.d.unmount(), 0)


class KernelForgetsReapedDirectoryTest(et.MountTestCase):
    """A reaped job's directory disappears without an rmdir the kernel saw:
    the daemon tells the kernel (FUSE_NOTIFY_DELETE, code 6), which then
    forgets the directory's inode, so the daemon's inode table drops it too.
    Read from libfuse's -d trace."""

    def test_reap_notifies_the_kernel(self):
        lower = self.make_dir("lower")
        tj.build_dataset(lower, "ds", 4, 100, 200, seed=1)
        d = self.mount(lower, opts=["cache.policy=epoch", "jobs.orphan_grace=1"], extra=["-d"])
        jp = d.path(".epochfs", "jobs", "gone")
        pid = os.fork()
        if pid == 0:  # registers itself and exits without rmdir
            code = 0
            try:
                os.mkdir(jp)
                tj.ctl_write(os.path.join(jp, "pids"), "%d\n" % os.getpid())
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertEqual(tj.read_json(os.path.join(jp, "status"))["name"], "gone")
        self.assertNotIn("NOTIFY: code=6", d.stderr_text())
        self.assertTrue(et.wait_for(lambda: "NOTIFY: code=6" in d.stderr_text(), 10),
                        "no FUSE_NOTIFY_DELETE after the reap")
        self.assertTrue(et.wait_for(
            lambda: "FORGET" in d.stderr_text().split("NOTIFY: code=6", 1)[1], 5),
            "the kernel did not forget the reaped directory")
        self.assertFalse(os.path.exists(jp))
        os.mkdir(jp)  # the name is free
        os.rmdir(jp)
        self.assertEqual(d.unmount(), 0)


class NeedWarningTest(et.MountTestCase):
    def test_need_over_the_budget_is_warned(self):
        lower = self.make_dir("lower")
        files = tj.build_dataset(lower, "ds", 40, 4 * KiB, 8 * KiB, seed=3)
        total = sum(len(b) for _, b in files)
        budget = 128 * KiB
        self.assertGreater(total, budget)
        os.chmod(self.tmp, 0o755)
        d = self.mount(lower, opts=["cache.policy=epoch", "cache.memory=%d" % budget,
                                    "warmup.batches=1", "allow_other"])
        jp = d.path(".epochfs", "jobs", "big")
        os.mkdir(jp)  # this process is the job
        tj.ctl_write(os.path.join(jp, "config"),
                     'batch_size = 4\nepochs = 5\nroot = "ds"\ncompute_ms = 0\n')
        tj.ctl_write(os.path.join(jp, "samples"), "".join(r + "\n" for r, _ in files))
        order = list(range(len(files)))
        tj.ctl_write(os.path.join(jp, "order", "0"), " ".join(map(str, order)))
        tj.ctl_write(os.path.join(jp, "order", "1"), " ".join(map(str, order)))
        self.assertEqual(d.stats()["warnings"], [])
        for i in order[:8]:  # warm-up: one batch, then caching
            self.assertEqual(et.read_file_raw(d.path("ds", files[i][0])), files[i][1])
        st = tj.read_json(os.path.join(jp, "status"))
        self.assertEqual(st["state"], "caching", st)
        # need = e · batches · mean = 4 · 10 · mean ≈ the whole dataset > budget
        self.assertGreater(st["cache_need_bytes"], budget, st)
        stats = d.stats()
        self.assertEqual(stats["need_total_bytes"], st["cache_need_bytes"])
        self.assertEqual(len(stats["warnings"]), 1, stats)
        self.assertIn("cache need %d bytes of 1 job exceeds the budget" % st["cache_need_bytes"],
                      stats["warnings"][0])
        # Every user reads `warnings`: it names no job (another user's job
        # names are theirs alone); the job's row and the log do.
        self.assertNotIn("big", stats["warnings"][0])

        def other_user_sees_no_name():
            with open(d.path(".epochfs", "stats"), "rb") as f:
                seen = json.loads(f.read())
            if seen["jobs"] != [] or len(seen["warnings"]) != 1 or "big" in json.dumps(seen):
                raise OSError(errno.EPROTO, "another user's stats: %r" % seen)
        self.assertEqual(et.as_user(65534, 65534, other_user_sees_no_name), 0)
        # The daemon logs it once (reaper tick, 1 s), not on every tick.
        self.assertTrue(et.wait_for(lambda: "exceeds the budget" in d.stderr_text(), 5),
                        d.stderr_text())
        self.assertIn("(big %d)" % st["cache_need_bytes"], d.stderr_text())
        time.sleep(2.5)
        self.assertEqual(d.stderr_text().count("exceeds the budget"), 1, d.stderr_text())
        os.rmdir(jp)
        self.assertEqual(d.stats()["warnings"], [])
        self.assertEqual(d.unmount(), 0)


if __name__ == "__main__":
    et.main()
