#!/usr/bin/python3
"""jobs_bench.py — what the epoch policy buys over LRU for concurrent training
jobs on slow storage (a benchmark, not a test; run as root).

    tests/bench/jobs_bench.py [--epochfs BIN] [--bps MIB] [--iops N]
                              [--budget-frac F] [--policies lru,epoch,none]

Setup (DESIGN.md §8):
  * slow storage: an ext4 image (in /dev/shm) on a loop device, mounted as
    LOWER. The epochfs DAEMON (the only process that reads LOWER) runs in a
    cgroup v1 blkio cgroup with blkio.throttle.read_bps_device and
    read_iops_device set for the loop device's major:minor. The page cache is
    dropped (echo 3 > /proc/sys/vm/drop_caches) before each run; epochfs
    drops the lower pages it reads (FADV_DONTNEED), so every miss goes to the
    throttled device (checked: the cgroup's blkio.throttle.io_service_bytes).
  * three jobs (JOBS below) with different dataset sizes, batch sizes, compute
    per batch and epoch counts run at once. Each job is a process that
    registers itself (mkdir .epochfs/jobs/NAME: its pid, and so its forked
    loaders, are attributed to it), writes config (batch_size, epochs, root,
    loaders, compute_ms = the compute it really emulates), samples, and at
    the start of epoch K order/K and order/K+1 then `epoch` K (what
    scripts/epochfs_sampler.py does). Like a PyTorch DataLoader with
    num_workers=2, prefetch_factor=2: 2 forked loader processes load whole
    batches round robin (open + read + close of every sample), at most 4
    batches in flight; the trainer (the job process) takes batches in order
    and sleeps compute_ms per batch.
  * the same workload (same files, same seeded orders) is run once per
    policy: cache.policy=lru (orders are written but the LRU ignores them),
    cache.policy=epoch, and "none" (lru with cache.memory=1MiB: next to no
    cache). Budget: --budget-frac of the total dataset bytes;
    warmup.batches=2.

Printed per run and job: wall time and, per epoch, its time, the mean
open+read+close latency seen by the loaders and (epoch policy only: LRU keeps
no per-job figures) the job's hits/misses from its status; per run: hits,
misses and bytes_read_lower from .epochfs/stats and the bytes the daemon's
cgroup read from the device. Then the ratios epoch/lru (and epoch/none,
lru/none) of the total time, each job's time and the lower bytes. The
machine is noisy: compare the ratios of one run, not absolute times across
runs. (Per-read latency cannot tell a miss from a hit here: blk-throttle
dispatches in bursts per time slice, so many misses complete in well under a
millisecond and a few wait ~100 ms; the average bandwidth is what it limits.)

Cleans up on any exit (job processes, unmount, daemon, ext4 mount, loop
device, cgroup, work dirs). Standard library only.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

KiB = 1024
MiB = 1024 * KiB
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Job:
    def __init__(self, name, n, size_lo, size_hi, batch, epochs, compute_ms, seed,
                 loaders=2, prefetch=2):
        self.name, self.n, self.size_lo, self.size_hi = name, n, size_lo, size_hi
        self.batch, self.epochs, self.compute_ms = batch, epochs, compute_ms
        self.seed, self.loaders, self.prefetch = seed, loaders, prefetch
        self.subdir = "ds_" + name
        self.files = []  # [(rel, size)]

    def order(self, k):
        rng = random.Random(self.seed * 7919 + k)
        perm = list(range(self.n))
        rng.shuffle(perm)
        return perm


# name, files, size range, batch, epochs, compute per batch (ms), seed
JOBS = [
    Job("alpha", 600, 32 * KiB, 96 * KiB, 16, 4, 30, 1),
    Job("beta", 300, 96 * KiB, 160 * KiB, 8, 3, 60, 2),
    Job("gamma", 800, 8 * KiB, 40 * KiB, 32, 4, 15, 3),
]


def log(msg):
    print(msg, flush=True)


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout


def write_ctl(path, text):
    """One control-file write: open, write all, close (the daemon takes it at close)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = text.encode()
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


# --------------------------------------------------------------------------
# Environment: loop device, ext4, blkio cgroup (all undone by Env.cleanup)
# --------------------------------------------------------------------------

class Env:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="epochfs-jobs-bench.")
        self.image = None
        self.loop = None
        self.lower = os.path.join(self.work, "lower")
        self.mnt = os.path.join(self.work, "mnt")
        self.lower_mounted = False
        self.cgroup = None
        self.daemon = None
        self.children = []
        self.majmin = None

    def setup(self, data_bytes):
        os.makedirs(self.lower)
        os.makedirs(self.mnt)
        fd, self.image = tempfile.mkstemp(prefix="epochfs-jobs-bench.", suffix=".img",
                                          dir="/dev/shm")
        os.close(fd)
        img_bytes = int(data_bytes * 1.3) + 64 * MiB
        os.truncate(self.image, img_bytes)
        sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.image)
        self.loop = sh("losetup", "-f", "--show", self.image).strip()
        sh("mount", "-t", "ext4", self.loop, self.lower)
        self.lower_mounted = True
        st = os.stat(self.loop)
        self.majmin = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        root = "/sys/fs/cgroup/blkio"
        if not os.path.exists(os.path.join(root, "blkio.throttle.read_bps_device")):
            os.makedirs(root, exist_ok=True)
            sh("mount", "-t", "cgroup", "-o", "blkio", "none", root)
        self.cgroup = os.path.join(root, "epochfs-jobs-bench.%d" % os.getpid())
        os.mkdir(self.cgroup)
        with open(os.path.join(self.cgroup, "blkio.throttle.read_bps_device"), "w") as f:
            f.write("%s %d\n" % (self.majmin, int(self.args.bps * MiB)))
        if self.args.iops > 0:
            with open(os.path.join(self.cgroup, "blkio.throttle.read_iops_device"), "w") as f:
                f.write("%s %d\n" % (self.majmin, self.args.iops))

    def device_read_bytes(self):
        """Bytes the cgroup (the daemon) read from the loop device so far."""
        with open(os.path.join(self.cgroup, "blkio.throttle.io_service_bytes")) as f:
            for line in f:
                p = line.split()
                if len(p) == 3 and p[0] == self.majmin and p[1] == "Read":
                    return int(p[2])
        return 0

    def enter_cgroup(self):  # preexec_fn of the daemon: before exec, in the child
        with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as f:
            f.write("%d\n" % os.getpid())

    def start_daemon(self, opts, logpath):
        self.daemon = subprocess.Popen(
            [self.args.epochfs, "-f", "-o", ",".join(opts), self.lower, self.mnt],
            stdout=open(logpath, "w"), stderr=subprocess.STDOUT,
            preexec_fn=self.enter_cgroup)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.daemon.poll() is not None:
                raise RuntimeError("epochfs exited %d: %s" % (self.daemon.returncode,
                                                             open(logpath).read()[-2000:]))
            if os.path.exists(os.path.join(self.mnt, ".epochfs", "version")):
                return
            time.sleep(0.05)
        raise RuntimeError("epochfs mount not ready after 20 s")

    def stop_daemon(self):
        if self.daemon is None:
            return None
        if mounted(self.mnt):
            r = subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True)
        try:
            rc = self.daemon.wait(10)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            rc = self.daemon.wait()
        self.daemon = None
        return rc

    def cleanup(self):
        for pid in self.children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        self.children = []
        try:
            self.stop_daemon()
        except Exception:
            traceback.print_exc()
        if self.lower_mounted:
            if subprocess.run(["umount", self.lower], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", self.lower], capture_output=True)
            self.lower_mounted = False
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], capture_output=True)
            self.loop = None
        if self.cgroup and os.path.isdir(self.cgroup):
            try:  # anything left in it goes back to the root cgroup first
                with open(os.path.join(self.cgroup, "cgroup.procs")) as f:
                    left = f.read().split()
                for pid in left:
                    with open("/sys/fs/cgroup/blkio/cgroup.procs", "w") as f:
                        f.write(pid + "\n")
                os.rmdir(self.cgroup)
            except OSError as e:
                print("jobs_bench: could not remove %s: %s" % (self.cgroup, e), file=sys.stderr)
            self.cgroup = None
        if self.image and os.path.exists(self.image):
            os.unlink(self.image)
        if not mounted(self.mnt) and not mounted(self.lower):
            shutil.rmtree(self.work, ignore_errors=True)


def mounted(path):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == path for line in f)


def build_datasets(lower):
    total = 0
    for job in JOBS:
        rng = random.Random(1000 + job.seed)
        job.files = []
        for i in range(job.n):
            size = rng.randint(job.size_lo, job.size_hi)
            rel = os.path.join("c%d" % (i % 8), "s_%05d.bin" % i)
            path = os.path.join(lower, job.subdir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(rng.randbytes(size))
            job.files.append((rel, size))
            total += size
    os.sync()
    return total


# --------------------------------------------------------------------------
# A job: the trainer process and its forked loaders
# --------------------------------------------------------------------------

def loader_main(job, mnt, w, cmd_r, rep_w):
    """Loads the batches the trainer asks for ("K J"), reports per batch."""
    orders = {}
    base = os.path.join(mnt, job.subdir)
    with os.fdopen(cmd_r, "r") as cmds:
        for line in cmds:
            line = line.strip()
            if line == "q":
                break
            k, j = map(int, line.split())
            if k not in orders:
                orders = {k: job.order(k)}
            nbytes, lat = 0, 0.0
            idx = orders[k][j * job.batch:(j + 1) * job.batch]
            for i in idx:
                t = time.perf_counter()
                fd = os.open(os.path.join(base, job.files[i][0]), os.O_RDONLY)
                try:
                    while True:
                        b = os.read(fd, 1 << 20)
                        if not b:
                            break
                        nbytes += len(b)
                finally:
                    os.close(fd)
                lat += time.perf_counter() - t
            os.write(rep_w, (json.dumps({"k": k, "j": j, "n": len(idx), "bytes": nbytes,
                                         "lat": lat}) + "\n").encode())


def job_main(job, mnt, result_path, start_at):
    res = {"name": job.name, "errors": [], "epochs": []}
    loaders = []
    try:
        while time.monotonic() < start_at:  # all jobs start together
            time.sleep(0.001)
        t0 = time.monotonic()
        res["t0"] = t0
        jd = os.path.join(mnt, ".epochfs", "jobs", job.name)
        os.mkdir(jd)
        write_ctl(os.path.join(jd, "config"),
                  'batch_size = %d\nepochs = %d\nroot = "%s"\nloaders = %d\ncompute_ms = %d\n'
                  % (job.batch, job.epochs, job.subdir, job.loaders, job.compute_ms))
        write_ctl(os.path.join(jd, "samples"), "".join(rel + "\n" for rel, _ in job.files))
        for w in range(job.loaders):
            cr, cw = os.pipe()
            rr, rw = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    os.close(cw)
                    os.close(rr)
                    loader_main(job, mnt, w, cr, rw)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                os._exit(code)
            os.close(cr)
            os.close(rw)
            loaders.append((pid, cw, os.fdopen(rr, "r")))
        res["setup_s"] = time.monotonic() - t0
        nb = (job.n + job.batch - 1) // job.batch
        window = job.loaders * job.prefetch
        for k in range(job.epochs):
            te = time.monotonic()
            # As EpochfsSampler.__iter__: order/K (first epoch), order/K+1, epoch K.
            if k == 0:
                write_ctl(os.path.join(jd, "order", "0"), " ".join(map(str, job.order(0))))
            if k + 1 < job.epochs:
                write_ctl(os.path.join(jd, "order", str(k + 1)),
                          " ".join(map(str, job.order(k + 1))))
            write_ctl(os.path.join(jd, "epoch"), "%d\n" % k)

            def ask(j):
                os.write(loaders[j % job.loaders][1], b"%d %d\n" % (k, j))
            for j in range(min(window, nb)):
                ask(j)
            ep = {"epoch": k, "reads": 0, "bytes": 0, "lat": 0.0, "wait_s": 0.0}
            for j in range(nb):
                tw = time.monotonic()
                line = loaders[j % job.loaders][2].readline()
                ep["wait_s"] += time.monotonic() - tw
                if not line:
                    raise RuntimeError("loader died in epoch %d" % k)
                rep = json.loads(line)
                if (rep["k"], rep["j"]) != (k, j):
                    raise RuntimeError("batch %r out of order, want %d %d" % (rep, k, j))
                ep["reads"] += rep["n"]
                ep["bytes"] += rep["bytes"]
                ep["lat"] += rep["lat"]
                if j + window < nb:
                    ask(j + window)
                time.sleep(job.compute_ms / 1000.0)  # the training step
            ep["time_s"] = time.monotonic() - te
            ep["status"] = read_json(os.path.join(jd, "status"))
            res["epochs"].append(ep)
        res["t_end"] = time.monotonic()
        for pid, cw, rf in loaders:
            os.write(cw, b"q\n")
            os.close(cw)
            rf.close()
            _, st = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(st) != 0:
                res["errors"].append("loader %d: %s" % (pid, st))
        loaders = []
        res["status"] = read_json(os.path.join(jd, "status"))
        os.rmdir(jd)
    except BaseException:
        res["errors"].append(traceback.format_exc())
    finally:
        for pid, cw, rf in loaders:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
    with open(result_path, "w") as f:
        json.dump(res, f)


# --------------------------------------------------------------------------
# One run of the workload under one policy
# --------------------------------------------------------------------------

def run_policy(env, label, opts):
    drop_caches()
    dev0 = env.device_read_bytes()
    env.start_daemon(opts, os.path.join(env.work, "epochfs-%s.log" % label))
    start_at = time.monotonic() + 0.3
    results = {}
    pids = {}
    for job in JOBS:
        rp = os.path.join(env.work, "result-%s-%s.json" % (label, job.name))
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                job_main(job, env.mnt, rp, start_at)
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        env.children.append(pid)
        pids[pid] = (job, rp)
    deadline = time.monotonic() + env.args.timeout
    peak_used = 0
    while pids:
        for pid in list(pids):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                env.children.remove(pid)
                job, rp = pids.pop(pid)
                results[job.name] = read_json(rp)
        if env.daemon.poll() is not None:
            raise RuntimeError("epochfs died during run %s" % label)
        try:
            peak_used = max(peak_used, read_json(os.path.join(env.mnt, ".epochfs", "stats"))["used"])
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("run %s: jobs still running after %d s" % (label, env.args.timeout))
        time.sleep(0.1)
    stats = read_json(os.path.join(env.mnt, ".epochfs", "stats"))
    rc = env.stop_daemon()
    dev = env.device_read_bytes() - dev0
    for job in JOBS:
        if results[job.name]["errors"]:
            raise RuntimeError("run %s, job %s:\n%s" % (label, job.name,
                                                     "\n".join(results[job.name]["errors"])))
    t0 = min(r["t0"] for r in results.values())
    t1 = max(r["t_end"] for r in results.values())
    return {"label": label, "opts": opts, "jobs": results, "stats": stats, "device_bytes": dev,
            "total_s": t1 - t0, "daemon_rc": rc, "peak_used": peak_used}


def report_run(run):
    st = run["stats"]
    log("\n== %s (-o %s): total %.1f s; stats: hits %d, misses %d, bytes_read_lower %.1f MiB; "
        "device read by the daemon's cgroup %.1f MiB; peak used %.1f MiB of %.1f MiB; daemon exit %s"
        % (run["label"], ",".join(run["opts"]), run["total_s"], st["hits"], st["misses"],
           st["bytes_read_lower"] / MiB, run["device_bytes"] / MiB, run["peak_used"] / MiB,
           st["budget"] / MiB, run["daemon_rc"]))
    for job in JOBS:
        r = run["jobs"][job.name]
        status_eps = {e["epoch"]: e for e in r.get("status", {}).get("epochs", [])}
        per = []
        for e in r["epochs"]:
            s = status_eps.get(e["epoch"])
            per.append("e%d %5.1fs %5.1fms%s" % (
                e["epoch"], e["time_s"], 1000 * e["lat"] / max(1, e["reads"]),
                " %4d/%-4d" % (s["hits"], s["misses"]) if s else ""))
        log("  %-6s %6.1f s | %s" % (job.name, r["t_end"] - r["t0"], " | ".join(per)))
    if any("e" in e["status"] for r in run["jobs"].values() for e in r["epochs"]):
        log("  policy figures at the end of each epoch (status): state, e (of b), rank, "
            "lambda, reserved, cur+next+tail MiB, t_s ms")
        for job in JOBS:
            figs = []
            for e in run["jobs"][job.name]["epochs"]:
                s = e["status"]
                figs.append("e%d %s e=%s/%d r%s l%.2f res %.1f held %.1f t_s %.0f" % (
                    e["epoch"], s.get("state"), s.get("e"), job.batch, s.get("rank"),
                    s.get("lambda", 0), s.get("reserved_bytes", 0) / MiB,
                    sum(s.get(k, 0) for k in ("cur_bytes", "next_bytes", "tail_bytes")) / MiB,
                    s.get("load_ns_per_sample", 0) / 1e6))
            log("  %-6s %s" % (job.name, " | ".join(figs)))


def ratio(a, b):
    return "%.2f" % (a / b) if b else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochfs", default=os.environ.get("EPOCHFS_BIN") or
                    os.path.join(REPO, "build-main", "src", "epochfs"))
    ap.add_argument("--bps", type=float, default=8.0, help="read MiB/s of the slow device")
    ap.add_argument("--iops", type=int, default=300, help="read IO/s of the slow device (0: none)")
    ap.add_argument("--budget-frac", type=float, default=0.5,
                    help="cache.memory as a fraction of all datasets' bytes")
    ap.add_argument("--policies", default="lru,epoch,none")
    ap.add_argument("--timeout", type=int, default=240, help="per run, seconds")
    args = ap.parse_args()

    if os.geteuid() != 0:
        sys.exit("jobs_bench: run as root")
    if not os.access(args.epochfs, os.X_OK):
        sys.exit("jobs_bench: no epochfs binary at %s (--epochfs or EPOCHFS_BIN)" % args.epochfs)
    for tool in ("mkfs.ext4", "losetup", "fusermount3"):
        if not shutil.which(tool):
            sys.exit("jobs_bench: %s not found" % tool)

    env = Env(args)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        data_bytes = sum(j.n * (j.size_lo + j.size_hi) // 2 for j in JOBS)
        env.setup(data_bytes)
        data_bytes = build_datasets(env.lower)
        budget = int(data_bytes * args.budget_frac)
        log("slow storage: ext4 on %s (%s), daemon in blkio cgroup %s: read %.1f MiB/s, %s IO/s"
            % (env.loop, env.majmin, env.cgroup, args.bps, args.iops or "unlimited"))
        log("datasets: %.1f MiB in total; budget %.1f MiB (%.0f%%); epochfs %s"
            % (data_bytes / MiB, budget / MiB, 100 * args.budget_frac, args.epochfs))
        for j in JOBS:
            size = sum(s for _, s in j.files)
            log("  job %-6s %4d files %5.1f MiB (%d-%d KiB), batch %2d, %d epochs, compute %d ms/batch,"
                " %d loaders, prefetch %d" % (j.name, j.n, size / MiB, j.size_lo // KiB,
                                              j.size_hi // KiB, j.batch, j.epochs, j.compute_ms,
                                              j.loaders, j.prefetch))
        common = ["warmup.batches=2"]
        configs = {"lru": ["cache.policy=lru", "cache.memory=%d" % budget] + common,
                   "epoch": ["cache.policy=epoch", "cache.memory=%d" % budget] + common,
                   "none": ["cache.policy=lru", "cache.memory=1MiB"] + common}
        runs = {}
        for label in args.policies.split(","):
            log("\nrunning %s ..." % label)
            runs[label] = run_policy(env, label, configs[label])
            report_run(runs[label])

        log("\n== summary (one run each; ratios are what to compare)")
        labels = list(runs)
        hdr = "%-24s" % "" + "".join("%10s" % l for l in labels)
        pairs = [(a, b) for a, b in (("epoch", "lru"), ("epoch", "none"), ("lru", "none"))
                 if a in runs and b in runs]
        hdr += "".join("%12s" % ("%s/%s" % p) for p in pairs)
        log(hdr)

        def row(name, fn, fmt, with_none=True):
            vals = {l: fn(runs[l]) for l in labels}
            log("%-24s" % name + "".join("%10s" % (fmt % vals[l]) for l in labels) +
                "".join("%12s" % (ratio(vals[a], vals[b]) if with_none or "none" not in (a, b)
                                  else "-") for a, b in pairs))
        row("total time (s)", lambda r: r["total_s"], "%.1f")
        for j in JOBS:
            row("  %s time (s)" % j.name,
                lambda r, n=j.name: r["jobs"][n]["t_end"] - r["jobs"][n]["t0"], "%.1f")
        row("bytes read lower (MiB)", lambda r: r["stats"]["bytes_read_lower"] / MiB, "%.1f")
        row("device bytes (MiB)", lambda r: r["device_bytes"] / MiB, "%.1f")
        row("misses (stats)", lambda r: r["stats"]["misses"], "%d")
        row("hit ratio (stats)", lambda r: r["stats"]["hits"] /
            max(1, r["stats"]["hits"] + r["stats"]["misses"]), "%.3f", with_none=False)
        return 0
    finally:
        env.cleanup()


if __name__ == "__main__":
    sys.exit(main())
