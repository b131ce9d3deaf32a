#!/usr/bin/python3
"""Jobs through the control protocol on a real mount (cache.policy=epoch).

ConcurrentJobsTest: three jobs over different datasets (subdirs of LOWER) with
different batch sizes, epoch counts, loader counts and speeds run at once.
Each job is a process that registers itself (mkdir: its pid becomes the job's
pid), declares config, samples and order/0, then for every epoch K writes
`epoch` (two jobs; the third lets the daemon infer epochs) and order/K+1, and
lets its FORKED loader processes (children of the job process: attributed by
ancestry) read their share of each batch in the declared order, sleeping per
batch to emulate compute. Checked: byte-exact data throughout; hits after the
warm-up; status figures equal what the job read (accesses, hits + misses per
epoch); the budget equation, sampled from .epochfs/stats while the jobs run;
bytes released after the last epoch and after rmdir.

BadInputTest: every kind of bad control input fails with the right errno, the
reason lands in status.last_error, and nothing already cached or declared
changes (stats used/objects, the job's status); the job then carries on.

Standard library only; exit 77 (SKIP) without /dev/fuse or root.
"""

import errno
import json
import os
import random
import subprocess
import time
import traceback

import epochfs_test as et

KiB = 1024
MiB = 1024 * KiB
NOBODY = 65534
REGION_KEYS = ("cur_bytes", "next_bytes", "tail_bytes", "granted_unused_bytes")


# --------------------------------------------------------------------------
# Control-file helpers
# --------------------------------------------------------------------------

def ctl_write(path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    """open + write everything + close: one control-file write (the daemon
    takes it whole at close). Raises OSError from whichever step failed."""
    if isinstance(data, str):
        data = data.encode()
    fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view[:1 << 20])
            view = view[n:]
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
    os.close(fd)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_text(path):
    with open(path) as f:
        return f.read()


def shared_bytes(st):
    """The idle pool lent to objects no job claims (policy.h shared_bytes()):
    stats' "shared"; when stats lacks it, resident − Σ jobs' regions, which
    holds when no two jobs hold the same file (true in these tests)."""
    if "shared" in st:
        return st["shared"]
    return st["resident"] - sum(j[k] for j in st["jobs"] for k in REGION_KEYS[:3])


def budget_violation(st):
    """None, or why this stats snapshot breaks the epoch policy's equation:
    pool + shared + Σ jobs (cur + next + tail + granted_unused) == budget."""
    held = sum(j[k] for j in st["jobs"] for k in REGION_KEYS)
    shared = shared_bytes(st)
    if st["pool"] + shared + held != st["budget"]:
        return "pool %d + shared %d + held %d = %d != budget %d (jobs %r)" % (
            st["pool"], shared, held, st["pool"] + shared + held, st["budget"], st["jobs"])
    if shared < 0 or ("shared" in st and st["resident"] != shared + sum(
            j[k] for j in st["jobs"] for k in REGION_KEYS[:3])):
        return "resident %d != shared %d + Σ cur/next/tail (jobs %r)" % (
            st["resident"], shared, st["jobs"])
    if st["used"] > st["budget"]:
        return "used %d > budget %d" % (st["used"], st["budget"])
    if st["pool"] < 0 or any(j[k] < 0 for j in st["jobs"] for k in REGION_KEYS):
        return "negative account: %r" % st
    return None


def build_dataset(lower, subdir, n, lo, hi, seed, classes=4):
    """n files of lo..hi bytes under LOWER/subdir/cls_*/; returns [(rel, bytes)]."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        size = rng.randint(lo, hi)
        rel = os.path.join("cls_%d" % (i % classes), "s_%04d.bin" % i)
        data = et.det_bytes(size, seed * 10007 + i)
        et.write_file(os.path.join(lower, subdir, rel), data)
        out.append((rel, data))
    return out


# --------------------------------------------------------------------------
# One job: a process with forked loader processes
# --------------------------------------------------------------------------

class JobSpec:
    def __init__(self, name, subdir, n, size_lo, size_hi, batch, epochs, workers,
                 compute_s, shard, epoch_file, seed):
        self.name, self.subdir, self.n = name, subdir, n
        self.size_lo, self.size_hi = size_lo, size_hi
        self.batch, self.epochs, self.workers = batch, epochs, workers
        self.compute_s, self.shard, self.epoch_file, self.seed = (
            compute_s, shard, epoch_file, seed)

    def orders(self):
        """Epoch K's declared order: a seeded permutation (of a shard when
        shard < 1: a different subset each epoch, like a reshuffled
        DistributedSampler)."""
        out = []
        for k in range(self.epochs):
            rng = random.Random(self.seed * 7919 + k)
            perm = list(range(self.n))
            rng.shuffle(perm)
            out.append(perm[:max(1, int(self.n * self.shard))])
        return out


def loader_main(spec, mnt, samples, orders, w, cmd_fd, rep_fd):
    """A forked loader: for each epoch the job asks for, read worker w's share
    of every batch in the declared order and compare with LOWER's bytes."""
    with os.fdopen(cmd_fd, "r") as f:
        loader_loop(spec, mnt, samples, orders, w, f, rep_fd)


def loader_loop(spec, mnt, samples, orders, w, f, rep_fd):
    while True:
        line = f.readline().strip()
        if not line or line == "q":
            return
        k = int(line)
        order = orders[k]
        opens, bad = 0, []
        for j in range(0, len(order), spec.batch):
            for idx in order[j:j + spec.batch][w::spec.workers]:
                rel, want = samples[idx]
                try:
                    got = et.read_file_raw(os.path.join(mnt, spec.subdir, rel))
                    opens += 1
                    if got != want:
                        bad.append("epoch %d sample %d (%s): %d bytes, want %d%s" % (
                            k, idx, rel, len(got), len(want),
                            "" if len(got) != len(want) else " (content differs)"))
                except OSError as e:
                    opens += 1
                    bad.append("epoch %d sample %d (%s): %s" % (k, idx, rel, e))
            if spec.compute_s:
                time.sleep(spec.compute_s)
        os.write(rep_fd, (json.dumps({"opens": opens, "bad": bad}) + "\n").encode())


def job_main(spec, mnt, samples, result_path, ready_fd=None, go_fd=None):
    """The job process (forked by the test): registers itself, declares, runs
    its loaders epoch by epoch, then ends the job. Writes a JSON result.
    With ready_fd/go_fd: after declaring, says so on ready_fd and waits for a
    byte on go_fd before reading (all jobs start reading together)."""
    res = {"pid": os.getpid(), "epochs": [], "bad": [], "opens": 0, "errors": []}
    jd = os.path.join(mnt, ".epochfs", "jobs", spec.name)
    loaders = []
    try:
        orders = spec.orders()
        res["order_lens"] = [len(o) for o in orders]
        os.mkdir(jd)
        res["pids_after_mkdir"] = read_text(os.path.join(jd, "pids")).split()
        ctl_write(os.path.join(jd, "config"),
                  'batch_size = %d\nepochs = %d\nroot = "%s"\nloaders = %d\n'
                  # The loaders only sleep, they load nothing while "computing":
                  # report no overlappable compute, so that e = batch_size.
                  'compute_ms = 0\n' % (spec.batch, spec.epochs, spec.subdir, spec.workers))
        ctl_write(os.path.join(jd, "samples"), "".join(rel + "\n" for rel, _ in samples))
        ctl_write(os.path.join(jd, "order", "0"), " ".join(map(str, orders[0])) + "\n")
        res["status_declared"] = read_json(os.path.join(jd, "status"))
        if ready_fd is not None:
            os.write(ready_fd, b"r")
            if os.read(go_fd, 1) != b"g":
                raise RuntimeError("the test did not say go")

        loaders = et.fork_loaders(
            spec.workers, lambda w, cr, rw: loader_main(spec, mnt, samples, orders, w, cr, rw))

        for k in range(spec.epochs):
            if spec.epoch_file:
                ctl_write(os.path.join(jd, "epoch"), "%d\n" % k)
            if k + 1 < spec.epochs:  # declared during K (inferred epochs: just before K's reads)
                ctl_write(os.path.join(jd, "order", str(k + 1)),
                          " ".join(map(str, orders[k + 1])) + "\n")
            opens = 0
            for rep in et.loader_epoch(loaders, k):
                opens += rep["opens"]
                res["bad"] += rep["bad"]
            res["opens"] += opens
            st = read_json(os.path.join(jd, "status"))
            res["epochs"].append({"epoch": k, "read": opens, "status": st,
                                  "order_files": sorted(os.listdir(os.path.join(jd, "order")),
                                                        key=int)})
        for pid, status in et.stop_loaders(loaders):
            res["errors"].append("loader %d exited with %s" % (pid, status))
        loaders = []
        res["final_status"] = read_json(os.path.join(jd, "status"))
        res["pids_final"] = read_text(os.path.join(jd, "pids")).split()
        os.rmdir(jd)
        res["stats_after_rmdir"] = read_json(os.path.join(mnt, ".epochfs", "stats"))
        res["listed_after_rmdir"] = spec.name in os.listdir(os.path.join(mnt, ".epochfs", "jobs"))
    except BaseException:
        res["errors"].append(traceback.format_exc())
    finally:
        et.kill_loaders(loaders)
    with open(result_path, "w") as f:
        json.dump(res, f)


# --------------------------------------------------------------------------
# 1. Concurrent jobs
# --------------------------------------------------------------------------

class ConcurrentJobsTest(et.MountTestCase):
    BUDGET = 2 * MiB  # the datasets total ~5.3 MiB: the jobs compete for it
    SPECS = [
        # name, subdir, n, sizes, batch, epochs, workers, compute, shard, epoch file, seed
        JobSpec("alpha", "dsA", 160, 2 * KiB, 24 * KiB, 8, 4, 2, 0.020, 1.0, True, 1),
        JobSpec("beta", "dsB/train", 120, 4 * KiB, 40 * KiB, 6, 3, 3, 0.040, 0.75, True, 2),
        JobSpec("gamma", "dsC", 100, 1 * KiB, 12 * KiB, 5, 5, 2, 0.004, 1.0, False, 3),
    ]
    RUN_TIMEOUT = 180.0 * et.TIME_SCALE

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.data = {s.name: build_dataset(self.lower, s.subdir, s.n, s.size_lo, s.size_hi,
                                           s.seed) for s in self.SPECS}

    def test_concurrent_jobs(self):
        d = self.mount(self.lower, opts=["cache.policy=epoch", "warmup.batches=2",
                                         "cache.memory=%d" % self.BUDGET])
        st0 = d.stats()
        self.assertEqual(st0["budget"], self.BUDGET)
        self.assertEqual(st0["pool"], self.BUDGET)
        self.assertEqual(st0["jobs"], [])

        # Every job registers and declares, then all start reading at once:
        # the jobs run concurrently whatever the scheduler does.
        procs, ready_r, go_w = {}, [], []
        for spec in self.SPECS:
            rp = os.path.join(self.tmp, "result-%s.json" % spec.name)
            rr, rw = os.pipe()
            gr, gw = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    os.close(rr)
                    os.close(gw)
                    job_main(spec, d.mnt, self.data[spec.name], rp, rw, gr)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                os._exit(code)
            os.close(rw)
            os.close(gr)
            ready_r.append(rr)
            go_w.append(gw)
            procs[pid] = (spec, rp)

        def reap_all():
            for pid in list(procs):
                try:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                except OSError:
                    pass
        self.addCleanup(reap_all)

        for rr in ready_r:  # EOF (b"") when a job failed before it was ready
            self.assertEqual(os.read(rr, 1), b"r", "a job failed to register; see stderr")
            os.close(rr)
        st = d.stats()
        self.assertEqual(sorted(j["name"] for j in st["jobs"]),
                         sorted(s.name for s in self.SPECS), st["jobs"])
        for gw in go_w:
            os.write(gw, b"g")
            os.close(gw)

        # Sample the budget equation while the jobs run.
        violations, samples, max_jobs, states_seen = [], 0, 0, set()
        min_pool, max_used = self.BUDGET, 0
        deadline = time.monotonic() + self.RUN_TIMEOUT
        running = dict(procs)
        while running and time.monotonic() < deadline:
            for pid in list(running):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    del running[pid]
            if not d.alive():
                self.fail("epochfs died; stderr:\n%s" % d.stderr_text())
            st = d.stats()
            samples += 1
            v = budget_violation(st)
            if v:
                violations.append(v)
            max_jobs = max(max_jobs, len(st["jobs"]))
            min_pool, max_used = min(min_pool, st["pool"]), max(max_used, st["used"])
            states_seen.update((j["name"], j["state"]) for j in st["jobs"])
            time.sleep(0.01)
        if running:
            self.fail("jobs still running after %.0fs: %s" % (
                self.RUN_TIMEOUT, [procs[p][0].name for p in running]))
        procs.clear()

        self.assertGreater(samples, 20, "too few stats samples taken")
        self.assertEqual(violations[:5], [], "%d of %d stats snapshots break the budget "
                         "equation" % (len(violations), samples))
        self.assertEqual(max_jobs, len(self.SPECS), "the jobs never ran concurrently")

        # Which job wins the budget, and so which job hits, depends on how
        # the jobs' reads interleave: only the jobs' sum is asserted. (One
        # job's hits after its warm-up: BadInputTest, deterministically.)
        summary, job_hits, job_misses, hits_after_warmup = [], 0, 0, 0
        for spec in self.SPECS:
            with open(os.path.join(self.tmp, "result-%s.json" % spec.name)) as f:
                res = json.load(f)
            with self.subTest(job=spec.name):
                self.check_job(spec, res)
            fs = res.get("final_status", {})
            job_hits += sum(e["hits"] for e in fs.get("epochs", []))
            job_misses += sum(e["misses"] for e in fs.get("epochs", []))
            hits_after_warmup += sum(e["hits"] for e in fs.get("epochs", [])[1:])
            summary.append("%s: %s" % (spec.name, [
                (e["epoch"], e["hits"], e["misses"]) for e in fs.get("epochs", [])]))
        print("\nper-epoch (epoch, hits, misses): " + "; ".join(summary) +
              "; %d stats samples, min pool %d, max used %d of %d; states seen %s" % (
                  samples, min_pool, max_used, self.BUDGET, sorted(states_seen)))
        self.assertGreater(hits_after_warmup, 0, "no job hit after its warm-up: " +
                           "; ".join(summary))

        # Everything released once every job is gone.
        st = d.stats()
        # Every dataset read was some job's: the store's counters agree.
        self.assertEqual((st["hits"], st["misses"]), (job_hits, job_misses), st)
        self.assertEqual(st["jobs"], [])
        self.assertEqual(st["pool"] + shared_bytes(st), st["budget"], st)
        self.assertLessEqual(st["used"], shared_bytes(st),
                             "objects no job holds and not in the shared region: %r" % st)
        self.assert_stats_sane(st)
        self.assertTrue(d.alive())
        self.assertEqual(d.unmount(), 0)

    def check_job(self, spec, res):
        self.assertEqual(res["errors"], [])
        self.assertEqual(res["bad"][:10], [], "%d bad reads" % len(res["bad"]))
        self.assertIn(str(res["pid"]), res["pids_after_mkdir"],
                      "the mkdir caller is not a registered pid")
        sd = res["status_declared"]
        self.assertEqual(sd["name"], spec.name)
        self.assertEqual(sd["samples"], spec.n)
        self.assertEqual(sd["declared_epochs"], [0])
        self.assertEqual(sd["last_error"], "")

        order_lens = res["order_lens"]
        self.assertEqual(len(res["epochs"]), spec.epochs)
        for k, ep in enumerate(res["epochs"]):
            self.assertEqual(ep["read"], order_lens[k], "epoch %d" % k)
            st = ep["status"]
            self.assertEqual(st["epoch"], k, "status after epoch %d: %r" % (k, st))
            self.assertEqual(st["last_error"], "")
            want_decl = [str(e) for e in range(k, min(k + 2, spec.epochs))]
            for e in want_decl:
                self.assertIn(e, ep["order_files"], "order/ listing after epoch %d" % k)
            # hits + misses of the epoch just read == samples read in it.
            self.assertEqual(st["hits"] + st["misses"], order_lens[k],
                             "status after epoch %d: hits %d + misses %d != %d read" % (
                                 k, st["hits"], st["misses"], order_lens[k]))
            self.assertEqual(st["accesses"], sum(order_lens[:k + 1]))
        states = [ep["status"]["state"] for ep in res["epochs"]]
        self.assertEqual(states[0], "caching", "states after each epoch: %r" % states)
        self.assertEqual(states[-1], "done", "states after each epoch: %r" % states)

        fs = res["final_status"]
        self.assertEqual(fs["state"], "done", fs)
        self.assertEqual(fs["accesses"], res["opens"])
        self.assertEqual(fs["accesses"], sum(order_lens))
        self.assertIn(res["pid"], fs["pids"])
        epochs = fs["epochs"]
        self.assertEqual([e["epoch"] for e in epochs], list(range(spec.epochs)), fs)
        for e in epochs:
            self.assertEqual(e["hits"] + e["misses"], order_lens[e["epoch"]],
                             "epoch %r of %s" % (e, spec.name))
        self.assertEqual(epochs[0]["hits"], 0, "hits during the warm-up epoch: %r" % epochs)
        for k in REGION_KEYS:
            self.assertEqual(fs[k], 0, "%s after the last epoch: %r" % (k, fs))

        self.assertFalse(res["listed_after_rmdir"])
        st = res["stats_after_rmdir"]
        self.assertNotIn(spec.name, [j["name"] for j in st["jobs"]])
        others = sum(j[k] for j in st["jobs"] for k in REGION_KEYS)
        self.assertEqual(st["pool"] + shared_bytes(st), st["budget"] - others, st)


# --------------------------------------------------------------------------
# 2. Bad control input
# --------------------------------------------------------------------------

def as_nobody(fn):
    """Run fn() in a forked child with uid/gid 65534; returns 0 or the errno."""
    return et.as_user(NOBODY, NOBODY, fn)


class BadInputTest(et.MountTestCase):
    N = 12

    def setUp(self):
        super().setUp()
        os.chmod(self.tmp, 0o755)  # uid 65534 must reach the mount point
        self.lower = self.make_dir("lower")
        os.chmod(self.lower, 0o755)
        self.files = []
        for i in range(self.N):
            rel = "c%d/f%02d.bin" % (i % 3, i)
            data = et.det_bytes(3000 + 977 * i, 50 + i)
            et.write_file(os.path.join(self.lower, "ds", rel), data)
            self.files.append((rel, data))
        et.write_file(os.path.join(self.lower, "outside.bin"), b"not in ds")

    def jp(self, *rel):
        return self.d.path(".epochfs", "jobs", *rel)

    def status(self, job="bad"):
        return read_json(self.jp(job, "status"))

    def snapshot(self):
        """What a failed write must not change: the store and both jobs'
        status (last_error aside)."""
        st = self.d.stats()
        out = {"used": st["used"], "objects": st["objects"], "pool": st["pool"],
               "jobs": st["jobs"], "order_list": sorted(os.listdir(self.jp("bad", "order")))}
        for job in ("bad", "fresh", "raw"):
            s = self.status(job)
            s.pop("last_error")
            out[job] = s
        return out

    def expect_refused(self, what, job, path, data, want_errno, reason_parts, before):
        """The write fails with want_errno, status.last_error names the file and
        the reason, and nothing else changed."""
        try:
            ctl_write(path, data)
        except OSError as e:
            self.assertEqual(e.errno, want_errno, "%s: got %s, want %s" % (
                what, errno.errorcode.get(e.errno), errno.errorcode[want_errno]))
        else:
            self.fail("%s: the write succeeded" % what)
        err = self.status(job)["last_error"]
        for part in reason_parts:
            self.assertIn(part, err, "%s: last_error %r" % (what, err))
        self.assertLess(len(err), 2000, "%s: last_error is %d bytes long" % (what, len(err)))
        self.assertEqual(self.snapshot(), before, "%s changed something" % what)
        return err

    def test_bad_control_input(self):
        self.d = d = self.mount(self.lower, opts=[
            "cache.policy=epoch", "warmup.batches=1", "cache.memory=1MiB", "allow_other"])
        jobs = d.path(".epochfs", "jobs")

        # --- job names -------------------------------------------------------
        for name in ("a b", "x" * 65, "x" * 70, "a\nb", "a*b", "ä"):
            self.assert_errno(errno.EINVAL, os.mkdir, os.path.join(jobs, name))
        # '..' and '.' never reach the daemon: the VFS refuses mkdir of them.
        e = self.assert_errno((errno.EINVAL, errno.EEXIST), os.mkdir, os.path.join(jobs, ".."))
        self.dotdot_errno = e.errno
        self.assertEqual(os.listdir(jobs), [])
        os.mkdir(os.path.join(jobs, "x" * 64))  # the longest name
        self.assert_errno(errno.EEXIST, os.mkdir, os.path.join(jobs, "x" * 64))
        os.rmdir(os.path.join(jobs, "x" * 64))
        self.assertEqual(os.listdir(jobs), [])

        # --- a job with something cached ----------------------------------
        # "bad": registered by this process; epoch 0 read in full, so after
        # the 1-batch warm-up samples of order 1 entered its `next` region.
        os.mkdir(self.jp("bad"))
        self.assertEqual(self.status()["state"], "registered")
        ctl_write(self.jp("bad", "config"), "batch_size = 2\nepochs = 3\nroot = \"ds\"\n"
                  "loaders = 1\ncompute_ms = 0\n")
        ctl_write(self.jp("bad", "samples"), "".join(r + "\n" for r, _ in self.files))
        rng = random.Random(5)
        orders = []
        for k in range(3):
            o = list(range(self.N))
            rng.shuffle(o)
            orders.append(o)
        ctl_write(self.jp("bad", "order", "0"), " ".join(map(str, orders[0])))
        ctl_write(self.jp("bad", "order", "1"), " ".join(map(str, orders[1])))
        ctl_write(self.jp("bad", "epoch"), "0\n")
        for i in orders[0]:
            self.assertEqual(et.read_file_raw(d.path("ds", self.files[i][0])), self.files[i][1])
        s = self.status()
        self.assertEqual(s["epoch"], 0)
        self.assertEqual(s["accesses"], self.N)
        self.assertGreater(s["next_bytes"], 0, s)
        self.assertEqual(s["last_error"], "")
        self.assertGreater(d.stats()["used"], 0)

        # "fresh": configured, no samples yet. "raw": registered only.
        os.mkdir(self.jp("fresh"))
        ctl_write(self.jp("fresh", "config"), "batch_size = 4\nepochs = 2\nroot = \"ds\"\n")
        os.mkdir(self.jp("raw"))
        before = self.snapshot()
        self.assertEqual(before["order_list"], ["0", "1"])
        self.assertEqual(before["raw"]["state"], "registered")
        self.assertEqual(before["fresh"]["state"], "configured")
        self.assertEqual(before["fresh"]["samples"], 0)

        E = errno.EINVAL
        order2 = self.jp("bad", "order", "2")
        # --- orders ---------------------------------------------------------
        self.expect_refused("unknown index", "bad", order2, "0 1 %d 2" % self.N, E,
                            ["order/2", "out of range", str(self.N)], before)
        # The log has the refusal with its reason (info; at most 20 such lines per 10 s).
        self.assertIn('write of "jobs/bad/order/2" (', d.stderr_text())
        self.assertIn("by uid 0 refused: token 3 (line 1) ", d.stderr_text())
        self.expect_refused("huge index", "bad", order2, "0 99999999999999999999", E,
                            ["order/2", "out of range"], before)
        self.expect_refused("duplicate index", "bad", order2, "3 1\n4 3", E,
                            ["order/2", "index 3 already listed"], before)
        self.expect_refused("garbage", "bad", order2, "1 2 three 4", E,
                            ["order/2", "three", "not a decimal"], before)
        self.expect_refused("negative", "bad", order2, "1 -2", E,
                            ["order/2", "negative"], before)
        self.expect_refused("binary garbage", "bad", order2, b"1 \x00\xff\x01 2", E,
                            ["order/2", "\\x"], before)
        self.expect_refused("empty order", "bad", order2, " \n", E, ["order/2"], before)
        self.expect_refused("10 MiB of digits", "bad", order2, "1" * (10 * MiB), E,
                            ["order/2", "out of range"], before)
        self.expect_refused("beyond the last epoch", "bad", self.jp("bad", "order", "3"),
                            "0 1", E, ["order/3", "beyond"], before)
        self.expect_refused("replacing the next epoch's order", "bad",
                            self.jp("bad", "order", "1"), " ".join(map(str, orders[2])), E,
                            ["order/1"], before)
        # --- epoch and pids ---------------------------------------------------
        epoch = self.jp("bad", "epoch")
        self.expect_refused("epoch garbage", "bad", epoch, "one\n", E, ["epoch"], before)
        self.expect_refused("epoch beyond", "bad", epoch, "3\n", E, ["epoch", "beyond"], before)
        pids = self.jp("bad", "pids")
        self.expect_refused("pids garbage", "bad", pids, "12ab\n", E, ["pids"], before)
        # --- config -----------------------------------------------------------
        self.expect_refused("config rewritten", "bad", self.jp("bad", "config"),
                            "batch_size = 3\nepochs = 3\n", E, ["config"], before)
        rawc = self.jp("raw", "config")
        for what, text, parts in [
                ("double '='", "batch_size = = 2\nepochs = 2\n", ["config", "line 1"]),
                ("string for int", 'batch_size = 2\nepochs = "two"\n', ["config", "epochs"]),
                ("unknown key", "batch_size = 2\nepochs = 2\nbach = 1\n", ["config", "bach"]),
                ("table", "[job]\nbatch_size = 2\nepochs = 2\n", ["config", "table"]),
                ("missing epochs", "batch_size = 2\n", ["config", "epochs"]),
                ("zero batch", "batch_size = 0\nepochs = 2\n", ["config", "batch_size"]),
                ("root outside", 'batch_size = 2\nepochs = 2\nroot = "../x"\n', ["config", ".."]),
                ("huge line", "batch_size = " + "7" * (10 * MiB) + "\nepochs = 2\n",
                 ["config", "too large", "65536"])]:
            self.expect_refused("config: " + what, "raw", rawc, text, E, parts, before)
        self.assertEqual(read_text(rawc), "")
        # --- samples ----------------------------------------------------------
        fs = self.jp("fresh", "samples")
        good = [r for r, _ in self.files]
        for what, lines, parts in [
                ("'..'", good[:3] + ["../outside.bin"], ["samples", "line 4", ".."]),
                ("'..' inside", good[:2] + ["c0/../../outside.bin"], ["samples", "line 3"]),
                ("absolute", good[:1] + ["/etc/passwd"], ["samples", "line 2", "absolute"]),
                ("absolute into ds", [os.path.join(self.lower, "ds", good[0])],
                 ["samples", "line 1", "absolute"]),
                ("line over 4096 bytes", good[:2] + ["d/" + "n" * 5000], ["samples", "line 3",
                                                                        "4096"]),
                ("duplicate", good[:3] + ["./" + good[1]], ["samples", "line 4", "line 2"]),
                ("empty line", good[:2] + ["", good[3]], ["samples", "line 3"]),
                ("a missing directory", good[:2] + ["nodir/x.bin"], ["samples", "line 3",
                                                                     "nodir"]),
                ("under a file", good[:2] + [good[0] + "/x.bin"], ["samples", "line 3",
                                                                  "not a directory"])]:
            self.expect_refused("samples: " + what, "fresh", fs,
                                "".join(l + "\n" for l in lines), E, parts, before)
        self.expect_refused("samples: 10 MiB line", "fresh", fs, "z" * (10 * MiB), E,
                            ["samples", "line 1"], before)
        # Only directories are checked at registration (one stat each); a
        # missing file in an existing directory is accepted unchecked, and
        # reported when the daemon goes to load it (test_prefetch.py).
        os.mkdir(self.jp("lazy"))
        ctl_write(self.jp("lazy", "config"), "batch_size = 4\nepochs = 2\nroot = \"ds\"\n")
        ctl_write(self.jp("lazy", "samples"), good[0] + "\nnope.bin\n")
        self.assertEqual(self.status("lazy")["samples"], 2)
        os.rmdir(self.jp("lazy"))
        self.assertEqual(self.snapshot(), before)

        # --- another uid: the job is not there for them ----------------------
        le_before = self.status()["last_error"]
        for f in ("order/2", "config", "samples", "epoch", "pids"):
            path = self.jp("bad", *f.split("/"))
            err = as_nobody(lambda: ctl_write(path, "0 1 2\n"))
            self.nobody_errno = err
            self.assertEqual(err, errno.ENOENT, "write of %s by uid %d: %s (another user's job "
                             "is invisible)" % (f, NOBODY, errno.errorcode.get(err, err)))
            self.assertEqual(self.snapshot(), before, "a refused write by uid %d changed "
                             "something" % NOBODY)
        self.assertEqual(self.status()["last_error"], le_before)
        for fn in (lambda: read_json(self.jp("bad", "status")), lambda: os.rmdir(self.jp("bad")),
                   lambda: os.stat(self.jp("bad"))):
            self.assertEqual(as_nobody(fn), errno.ENOENT)

        def listed():
            if "bad" in os.listdir(self.jp()):
                raise OSError(errno.EEXIST, "another user's job is listed")
        self.assertEqual(as_nobody(listed), 0)
        self.assertEqual(self.snapshot(), before)
        # Anyone may register a job of their own (jobs/ is 1777).
        self.assertEqual(as_nobody(lambda: (os.mkdir(self.jp("nob")),
                                            os.rmdir(self.jp("nob")))), 0)

        # --- unregistered jobs --------------------------------------------------
        for p in (self.jp("NOPE", "order", "0"), self.jp("NOPE", "config")):
            self.assert_errno(errno.ENOENT, ctl_write, p, "0\n")
        self.assert_errno(errno.ENOENT, os.rmdir, self.jp("NOPE"))
        # Non-canonical order names do not exist (creating one: EINVAL or ENOENT).
        for k in ("01", "x", "-1", "+1", "1000000"):
            self.assert_errno(errno.ENOENT, os.open, self.jp("bad", "order", k), os.O_WRONLY)
            self.assert_errno((errno.ENOENT, errno.EINVAL), ctl_write,
                              self.jp("bad", "order", k), "0\n")
        self.assertEqual(self.snapshot(), before)

        # --- the job carries on: epoch 1 hits what epoch 0 admitted ---------
        ctl_write(order2, " ".join(map(str, orders[2])))
        ctl_write(self.jp("bad", "epoch"), "1\n")
        for i in orders[1]:
            self.assertEqual(et.read_file_raw(d.path("ds", self.files[i][0])), self.files[i][1])
        s = self.status()
        self.assertEqual(s["epoch"], 1)
        self.assertTrue({1, 2} <= set(s["declared_epochs"]), s)
        self.assertGreater(s["hits"], 0, s)
        self.assertEqual(s["hits"] + s["misses"], self.N)
        self.assertEqual(s["accesses"], 2 * self.N)
        self.assertTrue(d.alive())
        print("\nmkdir('..') errno: %s; write by uid %d: %s"
              % (errno.errorcode[self.dotdot_errno],
                 NOBODY, errno.errorcode.get(self.nobody_errno, self.nobody_errno)))

        for job in ("bad", "fresh", "raw"):
            os.rmdir(self.jp(job))
        st = d.stats()
        self.assertEqual(st["jobs"], [])
        self.assertEqual(st["pool"] + shared_bytes(st), st["budget"], st)
        self.assertEqual(d.unmount(), 0)



CONTAINER_CHILD = r"""
import os, sys
jd, target = sys.argv[1], sys.argv[2]
assert os.getpid() == 1, os.getpid()  # the first process of a new pid namespace
with open(os.path.join(jd, "pids"), "w") as f:
    f.write("%d\n" % os.getpid())  # as EpochfsSampler does in a container
print("registered", flush=True)
sys.stdin.readline()
with open(target, "rb") as f:
    sys.stdout.write("%d\n" % len(f.read()))
"""


class ContainerPidTest(et.MountTestCase):
    def test_a_pid_written_from_a_container_names_the_writer(self):
        # In a pid namespace of its own the writer is pid 1 to itself; read in
        # the daemon's namespace that number is the host's init, the ancestor
        # of every process. The daemon registers the writer, as the writer meant.
        lower = self.make_dir("lower")
        et.write_file(os.path.join(lower, "d", "a.bin"), et.det_bytes(4096, 1))
        d = self.mount(lower, opts=["cache.policy=future"])
        jd = d.path(".epochfs", "jobs", "boxed")
        os.mkdir(jd)
        child = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--mount-proc", "/usr/bin/python3", "-c",
             CONTAINER_CHILD, jd, d.path("d", "a.bin")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(child.kill)
        line = child.stdout.readline().strip()
        if line != "registered":
            child.kill()
            self.fail("the child in its pid namespace: %r %s" % (line, child.stderr.read()))
        pids = read_json(os.path.join(jd, "status"))["pids"]
        self.assertNotIn(1, pids)
        # The registered pid is the container's pid 1: unshare's child, and
        # pid 1 in the innermost namespace it is in.
        with open("/proc/%d/task/%d/children" % (child.pid, child.pid)) as f:
            boxed = int(f.read().split()[0])
        self.assertIn(boxed, pids)
        with open("/proc/%d/status" % boxed) as f:
            nspid = [ln.split()[1:] for ln in f if ln.startswith("NSpid:")][0]
        self.assertEqual(nspid[-1], "1")
        out, err = child.communicate("go\n", timeout=60)
        self.assertEqual(child.returncode, 0, err)
        self.assertEqual(out.strip(), "4096")
        # Its read was the job's, and host pid 1 was never the job's.
        st = read_json(os.path.join(jd, "status"))
        self.assertEqual(st["accesses"], 1, st)
        os.rmdir(jd)


class OrphanTest(et.MountTestCase):
    """A job whose processes all exit without rmdir is orphaned: it keeps its
    cache for jobs.orphan_grace seconds, then everything returns to the pool."""

    def test_orphan_kept_for_the_grace_then_released(self):
        lower = self.make_dir("lower")
        files = build_dataset(lower, "ds", 24, 2000, 9000, seed=5)
        d = self.mount(lower, opts=["cache.policy=epoch", "warmup.batches=1",
                                    "cache.memory=4MiB", "jobs.orphan_grace=2"])
        jp = d.path(".epochfs", "jobs", "orph")
        order = list(range(len(files)))
        pid = os.fork()
        if pid == 0:  # the job: registers itself (mkdir), reads two epochs, dies
            code = 0
            try:
                os.mkdir(jp)
                ctl_write(os.path.join(jp, "config"),
                          'batch_size = 4\nepochs = 3\nroot = "ds"\ncompute_ms = 0\n')
                ctl_write(os.path.join(jp, "samples"), "".join(r + "\n" for r, _ in files))
                ctl_write(os.path.join(jp, "order", "0"), " ".join(map(str, order)))
                ctl_write(os.path.join(jp, "order", "1"), " ".join(map(str, order[::-1])))
                for k in (0, 1):
                    if k == 1:  # epoch 2 declared: `next` fills during epoch 1
                        ctl_write(os.path.join(jp, "order", "2"), " ".join(map(str, order)))
                    ctl_write(os.path.join(jp, "epoch"), str(k))
                    for i in (order if k == 0 else order[::-1]):
                        if et.read_file_raw(d.path("ds", files[i][0])) != files[i][1]:
                            code = 3
            except BaseException:
                traceback.print_exc()
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        # The job's process is gone; within a couple of reaper ticks it is
        # orphaned, with its cache still held.
        self.assertTrue(et.wait_for(lambda: read_json(os.path.join(jp, "status"))["orphaned"], 5))
        st = read_json(os.path.join(jp, "status"))
        self.assertEqual(st["state"], "orphaned")
        self.assertGreater(st["cur_bytes"] + st["next_bytes"] + st["tail_bytes"], 0, st)
        # After the grace the job is gone and its bytes are back in the pool.
        self.assertTrue(et.wait_for(lambda: not os.path.exists(jp), 10), "orphan not reaped")
        stats = d.stats()
        self.assertEqual(stats["jobs"], [])
        self.assertEqual(stats["pool"] + stats["shared"], stats["budget"], stats)
        self.assertIsNone(budget_violation(stats))



class NameReuseTest(et.MountTestCase):
    """A job name is free again after rmdir, whatever still refers to the old
    directory (a shell's working directory, an open control file): the new
    job is a new directory with its own files, not the dead one."""

    def test_a_name_is_reused_while_the_old_directory_is_held(self):
        lower = self.make_dir("lower")
        files = build_dataset(lower, "ds", 4, 1000, 2000, seed=3)
        d = self.mount(lower)
        jp = d.path(".epochfs", "jobs", "x")
        cfg = 'batch_size = 2\nepochs = 2\nroot = "ds"\n'
        os.mkdir(jp)
        ctl_write(os.path.join(jp, "config"), cfg)
        old_ino = os.stat(jp).st_ino
        holder = subprocess.Popen(["sleep", "600"], cwd=jp)
        self.addCleanup(lambda: (holder.kill(), holder.wait()))
        fd = os.open(os.path.join(jp, "status"), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        os.rmdir(jp)
        self.assertFalse(os.path.exists(jp))
        os.mkdir(jp)
        self.assertNotEqual(os.stat(jp).st_ino, old_ino)
        self.assertEqual(sorted(os.listdir(jp)),
                         ["config", "epoch", "order", "pids", "position", "samples", "status"])
        self.assertEqual(et.read_file(os.path.join(jp, "config")), b"")  # a new job
        ctl_write(os.path.join(jp, "config"), cfg)
        ctl_write(os.path.join(jp, "samples"), "".join(r + "\n" for r, _ in files))
        self.assertEqual(read_json(os.path.join(jp, "status"))["last_error"], "")
        # The old directory, still the holder's cwd, is gone.
        try:
            self.assertEqual(os.listdir("/proc/%d/cwd" % holder.pid), [])
        except FileNotFoundError:
            pass
        self.assertTrue(d.alive())

if __name__ == "__main__":
    et.main()
