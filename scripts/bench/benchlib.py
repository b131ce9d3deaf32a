"""benchlib — emulated slow storage and synthetic training jobs for the
real-mount benchmarks (scripts/bench/bench-jobs, scripts/bench/bench-torch; docs/benchmarks.md).

Not a test helper: benchmarks print figures from one run; compare ratios
within a run, never times across runs (the machine is shared and noisy).

What it provides (all of it undone by Env.cleanup, which the scripts call in
a `finally`, also on SIGINT/SIGTERM):

  * slow storage that slows every reader alike: an ext4 image (in /dev/shm)
    on a loop device, mounted as LOWER, and a cgroup v1 blkio cgroup with
    blkio.throttle.read_bps_device and read_iops_device for the loop device.
    Whoever reads LOWER runs in that cgroup: the epochfs daemon for epochfs
    runs (it does every lower read and drops the pages it read, FADV_DONTNEED),
    the job processes for the page-cache baseline.
  * a cgroup v1 memory cgroup for the page-cache baseline whose limit tracks
    budget + the readers' own working memory (usage minus unmapped file
    pages; its peak so far) + MEMCG_SLACK, re-set every 0.1 s, so the page
    cache the readers get stays at the cache budget however their own memory
    grows (the OOM killer is off in it: a process that outgrows the limit
    waits for the next tick); the peak working memory and the peak page cache
    are reported (the cache may exceed the budget by what exited processes
    freed).
  * drop_caches before each run (Env.drop_cold; drop_all_caches=False: the
    dataset's pages only).
  * the epochfs daemon (started inside the blkio cgroup, so all its threads
    are), a stats sampler (.epochfs/stats every tick: used, pool, shared and
    per job cur/next/tail/granted_unused bytes).
  * synthetic jobs (Job): a trainer process and forked loader processes that
    load whole batches in the job's declared order, round robin, with at most
    loaders * prefetch batches in flight, and a sleep of compute_ms per batch.
    Stall = the time the trainer waits for a batch (from the end of batch k's
    compute until batch k+1 is loaded; batch 0 of an epoch from the epoch's
    start). Loaders read into one preallocated buffer. Per batch, the loader
    reports bytes read, reads retried on ENOMEM (see retry_enomem) and the bytes its process
    made the block layer read (/proc/self/io read_bytes), so the page-cache
    baseline has per-job, per-epoch byte hit ratios.
  * the simulator: the same workload as `epochfs sim` TOML, and the call.

The standard library and the epochfs package of python/ (matplotlib is imported by
the plotting helpers).
"""

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# The epochfs package (python/ in this repository): Job, the control protocol's client.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import epochfs.job as control  # noqa: E402 (benchlib's own Job is a synthetic job)

KiB = 1024
MiB = 1024 * KiB
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLKIO_ROOT = "/sys/fs/cgroup/blkio"
MEMORY_ROOT = "/sys/fs/cgroup/memory"
# LOWER's ext4: noatime, so that no run writes it (a read that updated an
# inode's atime left that inode table block dirty, held by the journal,
# cached through the next drop_caches).
LOWER_MOUNT_OPTS = "noatime"
# Page-cache baseline: memory cgroup limit = budget + working memory + this.
MEMCG_SLACK = 1 * MiB
# Env.kernel_memory: the jobs' own memory on a mount (python, the loaders'
# buffers), beside the kernel's pages in their memory cgroup.
EPOCHFS_KERNEL_SLACK = 192 * MiB


def log(msg=""):
    print(msg, flush=True)


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def drop_caches():
    os.sync()
    write_file("/proc/sys/vm/drop_caches", "3\n")


def drop_caches_count():
    """How many times anyone dropped the kernel's caches since boot: writes to
    /proc/sys/vm/drop_caches, counted by their page bit and their slab bit
    (vmstat drop_pagecache + drop_slab; "3" counts twice; None if this kernel
    counts neither). Both take an epochfs run's cached files: the page bit
    their pages, the slab bit ("2", as bench-scale and some integration tests
    write) the inodes of files nobody holds open, and their pages with them.
    With one copy (fuse.one_copy) each such file is then read from LOWER
    again (a refill), bytes the policy did not choose to read."""
    n, seen = 0, False
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                k, v = line.split()
                if k in ("drop_pagecache", "drop_slab"):
                    n += int(v)
                    seen = True
    except OSError:
        pass
    return n if seen else None


# /proc/vmstat counters that say why the kernel let go of file pages during a
# run: global reclaim (kswapd, direct), inodes reclaimed with their pages, and
# drop_caches by anyone.
VMSTAT_KEYS = ("pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd", "pgsteal_direct",
               "pginodesteal", "kswapd_inodesteal", "drop_pagecache", "drop_slab")


def vmstat(keys=VMSTAT_KEYS):
    """The named /proc/vmstat counters ({} where the kernel has none)."""
    out = {}
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                k, v = line.split()
                if k in keys:
                    out[k] = int(v)
    except OSError:
        pass
    return out


def file_pages_reclaimed():
    """Page-cache pages the kernel's reclaim took since boot (vmstat
    pgsteal_file: kswapd's, direct and a memory cgroup's reclaim alike; None
    if this kernel does not count it). DAMON's pageout action (damon_pageout)
    is not counted there."""
    return vmstat(("pgsteal_file",)).get("pgsteal_file")


DAMON_ADMIN = "/sys/kernel/mm/damon/admin/kdamonds"


def damon_pageout():
    """DAMON schemes that page memory out, running now (sysfs, read only):
    ["kdamond K scheme S"], [] when none. Such a scheme (DAMON_RECLAIM, or
    one an administrator set) reclaims page-cache pages of regions it finds
    idle, a FUSE file's too, and vmstat's reclaim counters do not count
    them: with one copy (fuse.one_copy) each file it took pages of is read
    from LOWER again at its next read (a refill)."""
    out = []
    try:
        kdamonds = sorted(os.listdir(DAMON_ADMIN), key=lambda k: (len(k), k))
    except OSError:
        return out
    for k in kdamonds:
        base = os.path.join(DAMON_ADMIN, k)
        try:
            with open(os.path.join(base, "state")) as f:
                if f.read().strip() != "on":
                    continue
            for c in os.listdir(os.path.join(base, "contexts")):
                schemes = os.path.join(base, "contexts", c, "schemes")
                if not os.path.isdir(schemes):
                    continue
                for sc in sorted(os.listdir(schemes)):
                    action = os.path.join(schemes, sc, "action")
                    if os.path.exists(action):
                        with open(action) as f:
                            if f.read().strip() == "pageout":
                                out.append("kdamond %s scheme %s" % (k, sc))
        except OSError:
            continue
    return out


def drop_file_pages(root):
    """Drops the page cache of every file under `root` (POSIX_FADV_DONTNEED),
    and only theirs: the rest of the machine keeps its caches."""
    for d, _dirs, files in os.walk(root):
        for name in files:
            try:
                fd = os.open(os.path.join(d, name), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def mounted(path):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == path for line in f)


def proc_read_bytes():
    """Bytes this process made the block layer read (/proc/self/io read_bytes)."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def check_root_tools(epochfs_bin, prog):
    if os.geteuid() != 0:
        sys.exit("%s: run as root" % prog)
    if epochfs_bin and not os.access(epochfs_bin, os.X_OK):
        sys.exit("%s: no epochfs binary at %s (--epochfs or EPOCHFS_BIN)" % (prog, epochfs_bin))
    for tool in ("mkfs.ext4", "losetup", "fusermount3"):
        if not shutil.which(tool):
            sys.exit("%s: %s not found" % (prog, tool))
    for root, ctl in ((BLKIO_ROOT, "blkio.throttle.read_bps_device"),
                      (MEMORY_ROOT, "memory.limit_in_bytes")):
        if not os.path.exists(os.path.join(root, ctl)):
            sys.exit("%s: needs cgroup v1 %s (%s)" % (prog, os.path.basename(root),
                                                      os.path.join(root, ctl)))


def default_epochfs():
    return os.environ.get("EPOCHFS_BIN") or os.path.join(REPO, "build", "src", "epochfs")


def install_signal_exit():
    """SIGINT/SIGTERM raise SystemExit, so `finally: env.cleanup()` runs."""
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


# --------------------------------------------------------------------------
# Environment: loop device, ext4, blkio + memory cgroups, daemon
# --------------------------------------------------------------------------

class Env:
    def __init__(self, prefix, epochfs_bin, bps_mib, iops):
        self.prefix = prefix
        self.epochfs = epochfs_bin
        self.bps_mib, self.iops = bps_mib, iops
        self.work = tempfile.mkdtemp(prefix="%s." % prefix)
        self.image = None
        self.loop = None
        self.lower = os.path.join(self.work, "lower")
        self.source = self.lower  # what readers and the daemon read (see bench-torch --latency-ms)
        self.mnt = os.path.join(self.work, "mnt")
        self.lower_mounted = False
        self.blkio = None
        self.memcg = None
        self.daemon = None
        self.children = []
        self.majmin = None
        # False: cold runs drop the dataset's pages only (drop_cold), not the
        # whole machine's, so that other programs keep their caches (the
        # test suite runs bench-jobs --smoke).
        self.drop_all_caches = True
        # epochfs runs: None, or the bytes the jobs' memory cgroup gives the
        # kernel's pages of the mount beyond its own working memory
        # (EPOCHFS_KERNEL_SLACK): the kernel then reclaims handed-over pages
        # as it would on a machine short of memory.
        self.kernel_memory = None
        # None, or a directory each epochfs run's daemon log is copied to
        # (epochfs-LABEL.N.log, N counting the runs of the process).
        self.log_dir = None
        self.runs_done = 0
        # True: each run starts with LOWER's directories and inodes cached
        # (warm_lower_metadata); False: with them cold too. Either way alike.
        self.warm_metadata = True
        self.metadata_warmed = None  # (files, device reads) of the last warm-up

    # -- storage ------------------------------------------------------------
    def setup(self, data_bytes):
        os.makedirs(self.lower)
        os.makedirs(self.mnt)
        fd, self.image = tempfile.mkstemp(prefix="%s." % self.prefix, suffix=".img", dir="/dev/shm")
        os.close(fd)
        os.truncate(self.image, int(data_bytes * 1.3) + 64 * MiB)
        sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.image)
        self.loop = sh("losetup", "-f", "--show", self.image).strip()
        sh("mount", "-t", "ext4", "-o", LOWER_MOUNT_OPTS, self.loop, self.lower)
        self.lower_mounted = True
        st = os.stat(self.loop)
        self.majmin = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        self.fresh_blkio()
        self.memcg = os.path.join(MEMORY_ROOT, "%s.%d" % (self.prefix, os.getpid()))
        os.mkdir(self.memcg)
        # At the limit with nothing left to reclaim, pause (until the sampler
        # raises the limit to budget + the grown working memory), not OOM-kill.
        write_file(os.path.join(self.memcg, "memory.oom_control"), "1\n")

    def fresh_blkio(self):
        """A new blkio cgroup with the throttle for the next run (the last
        one's removed): a throttle group keeps the state of the reads
        dispatched under it, and a run that followed another in the same group
        started with its first reads held back (300-600 ms each, where a
        fresh group served them at once), so that each run of a comparison
        starts on the same footing."""
        self._remove_cgroup(self.blkio, BLKIO_ROOT)
        self.blkio_runs = getattr(self, "blkio_runs", 0) + 1
        self.blkio = os.path.join(BLKIO_ROOT, "%s.%d.%d" % (self.prefix, os.getpid(),
                                                            self.blkio_runs))
        os.mkdir(self.blkio)
        write_file(os.path.join(self.blkio, "blkio.throttle.read_bps_device"),
                   "%s %d\n" % (self.majmin, int(self.bps_mib * MiB)))
        if self.iops > 0:
            write_file(os.path.join(self.blkio, "blkio.throttle.read_iops_device"),
                       "%s %d\n" % (self.majmin, self.iops))

    def remount_lower(self):
        """Unmounts LOWER and mounts it again: nothing of its filesystem
        stays cached (its files' pages and inodes go with the unmount, its
        metadata blocks with the loop device's last close) and its journal is
        checkpointed. drop_caches alone does not do that: metadata blocks the
        journal still holds stay cached through it (the dataset's inodes and
        directories, written just before the first run; inode blocks a run's
        atime updates dirtied), so the first run of a process found the
        dataset's inodes cached and the later ones read them through the
        throttle. False when LOWER is busy or something is mounted over it:
        then it stays as it is."""
        if not self.lower_mounted or self.source != self.lower:
            return False
        os.sync()
        if subprocess.run(["umount", self.lower], capture_output=True).returncode != 0:
            return False
        self.lower_mounted = False
        sh("mount", "-t", "ext4", "-o", LOWER_MOUNT_OPTS, self.loop, self.lower)
        self.lower_mounted = True
        return True

    def drop_cold(self):
        """Before a run: the dataset's data is read cold, and every run
        starts alike whatever ran before. LOWER is mounted again
        (remount_lower); then drop_all_caches: the machine's page, dentry
        and inode caches (echo 3 > drop_caches); otherwise the pages of
        LOWER's files and of the loop device. Then, with warm_metadata, the
        dataset's directories and inodes are read back (warm_lower_metadata)."""
        if not self.remount_lower() and self.lower_mounted:
            log("warning: LOWER not mounted again (busy, or a store over it): blocks of its "
                "metadata may still be cached from before this run")
        if self.drop_all_caches:
            drop_caches()
        else:
            os.sync()
            drop_file_pages(self.lower)
            if self.loop:
                subprocess.run(["blockdev", "--flushbufs", self.loop], capture_output=True)
        if self.warm_metadata:
            self.warm_lower_metadata()

    def warm_lower_metadata(self):
        """Lists every directory of LOWER and stats every file in it from
        this process (outside the readers' blkio cgroup, so unthrottled):
        the run starts with the dataset's directories and inodes cached and
        its data cold, as on a machine that has listed its dataset before
        (the inodes are a few hundred KiB for thousands of files; the data
        is what a cache keeps or not). Cold, they cost the run a burst of
        4 KiB reads at its start (ext4 reads an inode table ahead in 4 KiB
        bios), each of which the throttle counts against the IO/s limit
        where the device serves them merged (7 bios per request in the
        three jobs' runs): one to two seconds of the emulated device, more
        for a mount that looks the declared files up ahead than for readers
        that open them one by one. Returns (files, device reads it took)."""
        reads0 = self.device_reads()
        n = 0
        for d, _dirs, files in os.walk(self.lower):
            for name in files:
                try:
                    os.lstat(os.path.join(d, name))
                    n += 1
                except OSError:
                    pass
        self.metadata_warmed = (n, self.device_reads() - reads0)
        return self.metadata_warmed

    def device_reads(self):
        """Read requests the loop device completed so far (/sys/block/loopN/stat)."""
        try:
            with open("/sys/block/%s/stat" % os.path.basename(self.loop)) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError, TypeError):
            return 0

    def describe(self):
        return ("ext4 on %s (%s) in /dev/shm, %s; readers' blkio cgroup: read %.1f MiB/s, %s IO/s; "
                "before each run LOWER is mounted again and its caches dropped, its directories "
                "and inodes %s"
                % (self.loop, self.majmin, LOWER_MOUNT_OPTS, self.bps_mib, self.iops or "unlimited",
                   "read back (warm metadata, cold data)" if self.warm_metadata
                   else "left cold (--cold-metadata)"))

    def device_read_bytes(self):
        """Bytes the blkio cgroup's processes read from the loop device so far."""
        with open(os.path.join(self.blkio, "blkio.throttle.io_service_bytes")) as f:
            for line in f:
                p = line.split()
                if len(p) == 3 and p[0] == self.majmin and p[1] == "Read":
                    return int(p[2])
        return 0

    def enter_blkio(self, pid=0):
        write_file(os.path.join(self.blkio, "cgroup.procs"), "%d\n" % (pid or os.getpid()))

    def enter_memcg(self, pid=0):
        write_file(os.path.join(self.memcg, "cgroup.procs"), "%d\n" % (pid or os.getpid()))

    # -- memory cgroup (page-cache baseline) ---------------------------------
    def memcg_stat(self):
        st = {}
        with open(os.path.join(self.memcg, "memory.stat")) as f:
            for line in f:
                k, v = line.split()
                st[k] = int(v)
        with open(os.path.join(self.memcg, "memory.usage_in_bytes")) as f:
            st["usage"] = int(f.read())
        # The cache is the unmapped file pages (data read with read(2)); mapped
        # file pages (python3, torch's libraries) count as working memory.
        st["file"] = max(0, st.get("total_active_file", 0) + st.get("total_inactive_file", 0)
                         - st.get("total_mapped_file", 0))
        st["working"] = max(0, st["usage"] - st["file"])
        return st

    def memcg_set_limit(self, limit):
        try:
            write_file(os.path.join(self.memcg, "memory.limit_in_bytes"), "%d\n" % limit)
            return True
        except OSError:  # EBUSY: could not reclaim down to it (yet)
            return False

    def memcg_reset(self):
        write_file(os.path.join(self.memcg, "memory.limit_in_bytes"), "-1\n")
        try:
            write_file(os.path.join(self.memcg, "memory.force_empty"), "0\n")
        except OSError:
            pass
        try:
            write_file(os.path.join(self.memcg, "memory.max_usage_in_bytes"), "0\n")
        except OSError:
            pass

    # -- daemon ----------------------------------------------------------------
    def start_daemon(self, opts, logpath):
        def preexec():
            self.enter_blkio()
        self.daemon = subprocess.Popen(
            [self.epochfs, "-f", "-o", ",".join(opts), self.source, self.mnt],
            stdout=open(logpath, "w"), stderr=subprocess.STDOUT, preexec_fn=preexec)
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

    def kill_daemon(self):
        """SIGKILL, as a crash: no unmount, no journal written at exit; then
        the dead mount is detached (fusermount3 -uz)."""
        if self.daemon is None:
            return None
        self.daemon.kill()
        rc = self.daemon.wait()
        self.daemon = None
        subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True)
        return rc

    def stats(self):
        return read_json(os.path.join(self.mnt, ".epochfs", "stats"))

    # -- cleanup -----------------------------------------------------------------
    def _remove_cgroup(self, path, root):
        if not path or not os.path.isdir(path):
            return
        try:  # anything left in it goes back to the root cgroup first
            with open(os.path.join(path, "cgroup.procs")) as f:
                left = f.read().split()
            for pid in left:
                try:
                    write_file(os.path.join(root, "cgroup.procs"), pid + "\n")
                except OSError:
                    pass
            for _ in range(50):
                try:
                    os.rmdir(path)
                    return
                except OSError:
                    time.sleep(0.1)
            os.rmdir(path)
        except OSError as e:
            print("%s: could not remove %s: %s" % (self.prefix, path, e), file=sys.stderr)

    def kill_children(self):
        """SIGKILL each child's process group (a job and its loaders, a training
        process and its DataLoader workers), then reap the child."""
        for pid in self.children:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
        self.children = []

    def cleanup(self):
        self.kill_children()
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
        self._remove_cgroup(self.blkio, BLKIO_ROOT)
        self.blkio = None
        self._remove_cgroup(self.memcg, MEMORY_ROOT)
        self.memcg = None
        if self.image and os.path.exists(self.image):
            os.unlink(self.image)
        if not mounted(self.mnt) and not mounted(self.lower):
            shutil.rmtree(self.work, ignore_errors=True)


# --------------------------------------------------------------------------
# Sampler: cache bytes over time (a thread in the benchmark process)
# --------------------------------------------------------------------------

class Sampler(threading.Thread):
    """Every `interval` s: epochfs stats (mode 'epochfs') or the memory cgroup
    (mode 'pagecache', where it also re-sets the limit to budget + working)."""

    def __init__(self, env, mode, budget, interval=0.25):
        super().__init__(daemon=True)
        self.env, self.mode, self.budget, self.interval = env, mode, budget, interval
        self.samples = []
        self.peak_used = 0
        self.peak_working = 0
        # Page-cache run: times the cache fell by more than half the budget
        # within one tick, which reclaim at a steady limit does not do: someone
        # else on the machine dropped caches (that run's baseline is not valid).
        self.outside_drops = 0
        self.t0 = time.monotonic()
        self._halt = threading.Event()

    def tick(self):
        t = time.monotonic() - self.t0
        if self.mode == "epochfs":
            try:
                st = self.env.stats()
            except (OSError, ValueError):
                return
            self.peak_used = max(self.peak_used, st.get("used", 0))
            self.samples.append({
                "t": t, "used": st.get("used", 0), "pool": st.get("pool", 0),
                "shared": st.get("shared", 0), "hits": st.get("hits", 0),
                "misses": st.get("misses", 0),
                "jobs": {j["name"]: {k: j.get(k, 0) for k in
                                     ("cur_bytes", "next_bytes", "tail_bytes",
                                      "granted_unused_bytes", "epoch", "hits", "misses")}
                         for j in st.get("jobs", [])}})
        else:
            try:
                st = self.env.memcg_stat()
            except (OSError, ValueError):
                return
            # Peak-hold: the limit never follows the working memory down, or
            # reclaiming mapped pages (libraries) would shrink it step by step.
            self.peak_working = max(self.peak_working, st["working"])
            self.env.memcg_set_limit(self.budget + self.peak_working + MEMCG_SLACK)
            self.peak_used = max(self.peak_used, st["file"])
            if self.samples and self.samples[-1]["used"] - st["file"] > self.budget / 2:
                self.outside_drops += 1
            self.samples.append({"t": t, "used": st["file"], "working": st["working"]})

    def run(self):
        while not self._halt.is_set():
            self.tick()
            self._halt.wait(self.interval)

    def stop(self):
        self._halt.set()
        self.join(5)


class DeviceWatch(threading.Thread):
    """Every `interval` s: the loop device's counters (/sys/block/loopN/stat:
    reads, sectors read, writes, sectors written, requests in flight) and the
    blkio cgroup's (blkio.throttle.io_serviced / io_service_bytes, reads), so
    that a run shows when its first reads reached the device and how fast the
    throttle let them through (summary())."""

    def __init__(self, env, interval=0.01):
        super().__init__(daemon=True)
        self.env, self.interval = env, interval
        self.stat = "/sys/block/%s/stat" % os.path.basename(env.loop)
        self.samples = []  # (monotonic t, dev reads, dev read sectors, dev writes,
        #                     dev write sectors, in flight, cgroup reads, cgroup read bytes)
        self._halt = threading.Event()

    def sample(self):
        try:
            with open(self.stat) as f:
                d = [int(x) for x in f.read().split()]
            cg_ios = cg_bytes = 0
            for name in ("blkio.throttle.io_serviced", "blkio.throttle.io_service_bytes"):
                with open(os.path.join(self.env.blkio, name)) as f:
                    for line in f:
                        p = line.split()
                        if len(p) == 3 and p[0] == self.env.majmin and p[1] == "Read":
                            if name.endswith("serviced"):
                                cg_ios = int(p[2])
                            else:
                                cg_bytes = int(p[2])
        except (OSError, ValueError):
            return
        self.samples.append((time.monotonic(), d[0], d[2], d[4], d[6], d[8], cg_ios, cg_bytes))

    def run(self):
        t0 = time.monotonic()
        while not self._halt.is_set():
            self.sample()  # finely for the start, then 4 times a second
            self._halt.wait(self.interval if time.monotonic() - t0 < 15 else 0.25)

    def stop(self):
        self._halt.set()
        self.join(5)
        self.sample()

    def summary(self, t_go):
        """What the device did before the jobs' start (t_go) and in the
        first seconds after it."""
        s = self.samples
        if len(s) < 2:
            return {}
        first = s[0]
        before = [x for x in s if x[0] <= t_go] or [first]
        at_go = before[-1]
        out = {"before_go_reads": at_go[1] - first[1],
               "before_go_read_mib": (at_go[2] - first[2]) * 512 / MiB,
               "writes": s[-1][3] - first[3],
               "write_mib": (s[-1][4] - first[4]) * 512 / MiB,
               "max_in_flight": max(x[5] for x in s)}
        after = [x for x in s if x[0] > t_go]
        t_first = next((x[0] for x in after if x[6] > at_go[6]), None)
        out["first_read_ms"] = None if t_first is None else (t_first - t_go) * 1000
        t_dev = next((x[0] for x in after if x[1] > at_go[1]), None)
        out["dev_first_read_ms"] = None if t_dev is None else (t_dev - t_go) * 1000
        for w in (0.5, 1, 2, 5, 10):
            upto = [x for x in after if x[0] <= t_go + w]
            last = upto[-1] if upto else at_go
            out["cg_read_mib_%gs" % w] = (last[7] - at_go[7]) / MiB
            out["cg_reads_%gs" % w] = last[6] - at_go[6]
            out["dev_read_mib_%gs" % w] = (last[2] - at_go[2]) * 512 / MiB
            out["dev_reads_%gs" % w] = last[1] - at_go[1]
        return out


# --------------------------------------------------------------------------
# Synthetic jobs
# --------------------------------------------------------------------------

class Job:
    """name, files, size range (uniform), batch, epochs, compute per batch (ms),
    order seed, loaders, prefetch (batches in flight per loader), start offset.
    use_sim_orders(doc) replaces the seeded orders and drawn sizes by the
    simulator's (`epochfs sim WORKLOAD --orders`), so the job reads its workload."""

    def __init__(self, name, n, size_lo, size_hi, batch, epochs, compute_ms, seed,
                 loaders=2, prefetch=1, start_s=0.0):
        self.name, self.n, self.size_lo, self.size_hi = name, n, size_lo, size_hi
        self.batch, self.epochs, self.compute_ms = batch, epochs, compute_ms
        self.seed, self.loaders, self.prefetch, self.start_s = seed, loaders, prefetch, start_s
        self.subdir = "ds_" + name
        self.files = []  # [(rel, size)]
        self.orders = None  # given orders, one per epoch (the simulator's)
        self.sizes = None   # given sizes, one per sample (the simulator's)

    def use_sim_orders(self, doc):
        """Takes the job of this name from `epochfs sim WORKLOAD --orders`' JSON:
        its sizes and its order of each epoch. Its shape must be this job's."""
        sim = next((j for j in doc["jobs"] if j["name"] == self.name), None)
        if sim is None:
            raise ValueError("no job %r in the simulator's workload" % self.name)
        if len(sim["sizes"]) != self.n or len(sim["orders"]) != self.epochs or any(
                not self.size_lo <= s <= self.size_hi for s in sim["sizes"]):
            raise ValueError("job %r: the simulator's has %d samples, %d epochs; want %d, %d, "
                             "sizes %d-%d" % (self.name, len(sim["sizes"]), len(sim["orders"]),
                                              self.n, self.epochs, self.size_lo, self.size_hi))
        self.sizes, self.orders = list(sim["sizes"]), [list(o) for o in sim["orders"]]

    def order(self, k):
        if self.orders is not None:
            return list(self.orders[k])
        rng = random.Random(self.seed * 7919 + k)
        perm = list(range(self.n))
        rng.shuffle(perm)
        return perm

    def data_bytes(self):
        return sum(s for _, s in self.files)

    def describe(self):
        return ("%-6s %5d files %6.1f MiB (%d-%d KiB), batch %2d, %d epochs, compute %d ms/batch, "
                "%d loaders, %d batch(es) in flight, start %.1f s"
                % (self.name, self.n, self.data_bytes() / MiB, self.size_lo // KiB,
                   self.size_hi // KiB, self.batch, self.epochs, self.compute_ms, self.loaders,
                   self.loaders * self.prefetch, self.start_s))


def scale_jobs(jobs, frac):
    """The same jobs with `frac` of the files (at least 2 batches each)."""
    for j in jobs:
        j.n = max(2 * j.batch, int(j.n * frac))
    return jobs


def build_datasets(lower, jobs):
    total = 0
    for job in jobs:
        rng = random.Random(1000 + job.seed)
        job.files = []
        for i in range(job.n):
            size = rng.randint(job.size_lo, job.size_hi)
            if job.sizes is not None:
                size = job.sizes[i]
            rel = os.path.join("c%d" % (i % 8), "s_%05d.bin" % i)
            path = os.path.join(lower, job.subdir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(rng.randbytes(size))
            job.files.append((rel, size))
            total += size
    os.sync()
    return total


def retry_enomem(fn, *a):
    """fn(*a), retried while it fails with ENOMEM; returns (result, retries).

    In the page-cache run's memory cgroup (OOM killer off) a read whose page
    cache charge finds nothing to reclaim fails with ENOMEM until the sampler
    raises the limit to budget + the grown working memory (within 0.1 s)."""
    n = 0
    while True:
        try:
            return fn(*a), n
        except OSError as e:
            if e.errno != errno.ENOMEM or n >= 2000:
                raise
            n += 1
            time.sleep(0.005)


def loader_main(job, base, cmd_r, rep_w):
    """Loads the batches the trainer asks for ("K J"), reports per batch."""
    orders = {}
    buf = bytearray(1 << 20)  # one buffer, allocated before the start: no growth per read
    with os.fdopen(cmd_r, "r") as cmds:
        for line in cmds:
            line = line.strip()
            if line == "q":
                break
            k, j = map(int, line.split())
            if k not in orders:
                orders = {k: job.order(k)}
            nbytes, enomem = 0, 0
            io0 = proc_read_bytes()
            idx = orders[k][j * job.batch:(j + 1) * job.batch]
            for i in idx:
                fd, r = retry_enomem(os.open, os.path.join(base, job.files[i][0]), os.O_RDONLY)
                enomem += r
                try:
                    while True:
                        n, r = retry_enomem(os.readv, fd, [buf])
                        enomem += r
                        if not n:
                            break
                        nbytes += n
                finally:
                    os.close(fd)
            os.write(rep_w, (json.dumps({"k": k, "j": j, "n": len(idx), "bytes": nbytes,
                                         "dev": proc_read_bytes() - io0,
                                         "enomem": enomem}) + "\n").encode())


def job_main(job, mode, env, result_path, go_r, root=None, before_epoch=None):
    """One job: registers (epochfs), forks loaders, waits for `go`, trains.
    root: the directory holding the job's subdir (default: LOWER for
    'pagecache', the mount for 'epochfs'; mode 'local' reads `root` outside
    the cgroups). before_epoch(k): called before epoch k is timed."""
    res = {"name": job.name, "errors": [], "epochs": []}
    loaders = []
    try:
        if mode == "pagecache":
            env.enter_blkio()
            env.enter_memcg()
            base = os.path.join(root or env.lower, job.subdir)
        elif mode == "local":
            base = os.path.join(root, job.subdir)
        else:
            if env.kernel_memory is not None:
                env.enter_memcg()
            base = os.path.join(root or env.mnt, job.subdir)
        ej = control.Job(env.mnt, job.name)  # the control protocol, as the package speaks it
        for _ in range(job.loaders):
            cr, cw = os.pipe()
            rr, rw = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    os.close(cw)
                    os.close(rr)
                    os.close(go_r)
                    loader_main(job, base, cr, rw)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                os._exit(code)
            os.close(cr)
            os.close(rw)
            loaders.append((pid, cw, os.fdopen(rr, "r")))
        os.read(go_r, 1)  # all jobs start together (then each after its start_s)
        os.close(go_r)
        t_go = time.monotonic()
        res["t_go"] = t_go
        while time.monotonic() < t_go + job.start_s:
            time.sleep(0.005)
        t0 = time.monotonic()
        res["t0"] = t0
        if mode == "epochfs":
            ej.create()  # registers this pid, so the forked loaders are the job's
            ej.configure(job.batch, job.epochs, root=job.subdir, loaders=job.loaders,
                         compute_ms=job.compute_ms)
            ej.set_samples([rel for rel, _ in job.files])
            for pid, _, _ in loaders:
                ej.add_pid(pid)
        nb = (job.n + job.batch - 1) // job.batch
        window = job.loaders * job.prefetch
        for k in range(job.epochs):
            if before_epoch is not None:
                before_epoch(k)
            # CPU seconds of the readers' side: the daemon (epochfs), the
            # loader processes (every mode), read from /proc around the epoch.
            cpu0 = (proc_cpu_s(env.daemon.pid) if mode == "epochfs" else 0.0,
                    sum(proc_cpu_s(pid) for pid, _, _ in loaders))
            te = time.monotonic()
            if mode == "epochfs":  # as EpochfsSampler.__iter__: order/K, order/K+1, epoch K
                if k == 0:
                    ej.declare(0, job.order(0))
                if k + 1 < job.epochs:
                    ej.declare(k + 1, job.order(k + 1))
                ej.start_epoch(k)

            last_report = [None]

            def ask(j):
                os.write(loaders[j % job.loaders][1], b"%d %d\n" % (k, j))
                # As EpochfsSampler: `position` every `loaders` batches handed
                # out, at most one per 5 ms (report_interval_s).
                if mode == "epochfs" and (j + 1) % job.loaders == 0 and j + 1 < nb:
                    now = time.monotonic()
                    if last_report[0] is None or now - last_report[0] >= 0.005:
                        last_report[0] = now
                        ej.report_position(k, (j + 1) * job.batch)
            for j in range(min(window, nb)):
                ask(j)
            ep = {"epoch": k, "reads": 0, "bytes": 0, "dev": 0, "stall_s": 0.0, "enomem": 0}
            for j in range(nb):
                tw = time.monotonic()
                line = loaders[j % job.loaders][2].readline()
                ep["stall_s"] += time.monotonic() - tw
                if not line:
                    raise RuntimeError("loader died in epoch %d" % k)
                rep = json.loads(line)
                if (rep["k"], rep["j"]) != (k, j):
                    raise RuntimeError("batch %r out of order, want %d %d" % (rep, k, j))
                ep["reads"] += rep["n"]
                ep["bytes"] += rep["bytes"]
                ep["dev"] += rep["dev"]
                ep["enomem"] += rep["enomem"]
                if j + window < nb:
                    ask(j + window)
                time.sleep(job.compute_ms / 1000.0)  # the training step
            ep["time_s"] = time.monotonic() - te
            ep["daemon_cpu_s"] = (proc_cpu_s(env.daemon.pid) - cpu0[0]) if mode == "epochfs" else 0.0
            ep["loaders_cpu_s"] = sum(proc_cpu_s(pid) for pid, _, _ in loaders) - cpu0[1]
            if mode == "epochfs":
                ej.report_position(k, job.n)  # and at the end of the epoch
                ep["status"] = ej.status()
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
        if mode == "epochfs":
            res["status"] = ej.status()
            ej.remove(missing_ok=False)
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


def proc_cpu_s(pid):
    """User and system CPU seconds of process `pid` so far, every thread (0 if gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_jobs(env, jobs, label, mode, opts, budget, timeout, interval=None, root=None,
             before_epoch=None, stop="unmount"):
    """One run of all jobs. mode: 'pagecache' (read LOWER directly, in the
    blkio and memory cgroups), 'epochfs' (a fresh daemon with `opts`) or
    'local' (read `root`, a directory with the jobs' subdirs, outside the
    cgroups). before_epoch(k): called in each job before its epoch k is timed.
    stop: how an epochfs run ends, 'unmount' or 'kill' (SIGKILL, then a lazy
    unmount of the dead mount)."""
    env.drop_cold()
    env.fresh_blkio()
    dev0 = env.device_read_bytes()
    drops0 = drop_caches_count()
    vm0 = vmstat()
    watch = DeviceWatch(env)
    watch.start()
    if mode == "epochfs":
        env.start_daemon(opts, os.path.join(env.work, "epochfs-%s.log" % label))
        if env.kernel_memory is not None:
            env.memcg_reset()
            env.memcg_set_limit(env.kernel_memory + EPOCHFS_KERNEL_SLACK)
    else:
        env.memcg_reset()
        env.memcg_set_limit(budget + 256 * MiB)  # until the sampler's first tick
    go_r, go_w = os.pipe()
    results, pids = {}, {}
    for job in jobs:
        rp = os.path.join(env.work, "result-%s-%s.json" % (label, job.name))
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.setpgid(0, 0)  # the job and its loaders: one group for kill_children
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.close(go_w)
                job_main(job, mode, env, rp, go_r, root, before_epoch)
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        env.children.append(pid)
        pids[pid] = (job, rp)
    os.close(go_r)
    time.sleep(0.5)  # loaders forked, cgroups entered
    if interval is None:  # the memory cgroup's limit follows the working memory closely
        interval = 0.1 if mode == "pagecache" else 0.25
    sampler = Sampler(env, mode, budget, interval)
    sampler.tick()
    sampler.start()
    os.write(go_w, b"g" * len(jobs))
    os.close(go_w)
    deadline = time.monotonic() + timeout
    try:
        while pids:
            for pid in list(pids):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    env.children.remove(pid)
                    job, rp = pids.pop(pid)
                    results[job.name] = read_json(rp)
            if mode == "epochfs" and env.daemon.poll() is not None:
                raise RuntimeError("epochfs died during run %s" % label)
            if time.monotonic() > deadline:
                raise RuntimeError("run %s: jobs still running after %d s" % (label, timeout))
            time.sleep(0.05)
    finally:
        sampler.stop()
        watch.stop()
    stats = env.stats() if mode == "epochfs" else None
    rc = None
    if mode == "epochfs":
        rc = env.stop_daemon() if stop == "unmount" else env.kill_daemon()
    env.runs_done += 1
    if mode == "epochfs" and env.log_dir:
        os.makedirs(env.log_dir, exist_ok=True)
        shutil.copy(os.path.join(env.work, "epochfs-%s.log" % label),
                    os.path.join(env.log_dir, "epochfs-%s.%d.log" % (label, env.runs_done)))
    dev = env.device_read_bytes() - dev0
    drops1 = drop_caches_count()
    vm1 = vmstat()
    for job in jobs:
        if results[job.name]["errors"]:
            raise RuntimeError("run %s, job %s:\n%s" % (label, job.name,
                                                     "\n".join(results[job.name]["errors"])))
    t0 = min(r["t_go"] for r in results.values())
    for s in sampler.samples:  # sampler time -> time since the jobs' start
        s["t"] -= t0 - sampler.t0
    return {"label": label, "mode": mode, "opts": opts, "jobs": results, "stats": stats,
            "device_bytes": dev, "makespan_s": max(r["t_end"] for r in results.values()) - t0,
            "daemon_rc": rc, "peak_used": sampler.peak_used,
            "outside_drops": sampler.outside_drops,
            "drop_caches": None if drops0 is None or drops1 is None else drops1 - drops0,
            "peak_working": sampler.peak_working, "samples": sampler.samples,
            "device_start": watch.summary(t0), "metadata_warmed": env.metadata_warmed,
            "vmstat": {k: vm1[k] - vm0[k] for k in vm1 if k in vm0}}


# --------------------------------------------------------------------------
# Figures of a run
# --------------------------------------------------------------------------

def job_time(run, name):
    r = run["jobs"][name]
    return r["t_end"] - r["t0"]


def job_stall(run, name):
    return sum(e["stall_s"] for e in run["jobs"][name]["epochs"])


def total_stall(run):
    return sum(job_stall(run, n) for n in run["jobs"])


def epoch_hit_ratios(run, name):
    """Per epoch: the job's hit ratio, or None where this run cannot tell.

    epochfs with the epoch policy: hits/(hits+misses) from the job's status.
    page cache: 1 - device bytes / bytes read, from the loaders' read_bytes.
    epochfs with LRU: None (LRU keeps no per-job counts)."""
    r = run["jobs"][name]
    out = []
    if run["mode"] == "pagecache":
        for e in r["epochs"]:
            out.append(max(0.0, 1.0 - e["dev"] / e["bytes"]) if e["bytes"] else None)
        return out
    eps = {e["epoch"]: e for e in r.get("status", {}).get("epochs", [])}
    for e in r["epochs"]:
        s = eps.get(e["epoch"])
        if s and s["hits"] + s["misses"] > 0:
            out.append(s["hits"] / (s["hits"] + s["misses"]))
        else:
            out.append(None)
    return out


def run_hit_ratio(run):
    """Whole run: epochfs stats hits/(hits+misses); page cache: byte ratio."""
    if run["mode"] == "pagecache":
        rd = sum(e["bytes"] for r in run["jobs"].values() for e in r["epochs"])
        return max(0.0, 1.0 - run["device_bytes"] / rd) if rd else 0.0
    st = run["stats"]
    return st["hits"] / max(1, st["hits"] + st["misses"])


def bytes_read(run):
    return sum(e["bytes"] for r in run["jobs"].values() for e in r["epochs"])


# --------------------------------------------------------------------------
# Simulator
# --------------------------------------------------------------------------

def sim_toml(jobs, budget_frac, bps_mib, iops, latency_ms, warmup_batches, seed=1, comment=""):
    concurrency = sum(j.loaders for j in jobs)
    out = []
    if comment:
        out += ["# " + line for line in comment.splitlines()]
    out += ["seed = %d" % seed,
            'budget = "%g%%"' % (100 * budget_frac),
            "",
            "[storage]",
            'bandwidth = "%s"' % ("%dMiB" % bps_mib if bps_mib == int(bps_mib)
                                  else "%dKiB" % int(bps_mib * 1024)),
            "latency_ms = %g" % latency_ms,
            "concurrency = %d" % concurrency,
            "iops = %d" % iops,
            "",
            "[epoch]",
            "warmup_batches = %d" % warmup_batches]
    for j in jobs:
        out += ["",
                "[[job]]",
                'name = "%s"' % j.name,
                "samples = %d" % j.n,
                'size = { dist = "uniform", min = "%dKiB", max = "%dKiB" }'
                % (j.size_lo // KiB, j.size_hi // KiB),
                "batch_size = %d" % j.batch,
                "epochs = %d" % j.epochs,
                "loaders = %d" % j.loaders,
                "compute_ms = %g" % j.compute_ms,
                "start_s = %g" % j.start_s,
                "report_compute = true"]
    return "\n".join(out) + "\n"


def sim_orders(epochfs_bin, toml_path):
    """`epochfs sim TOML --orders`: every job's sizes and epoch orders (JSON)."""
    r = subprocess.run([epochfs_bin, "sim", toml_path, "--orders"], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("%s sim %s --orders: %s" % (epochfs_bin, toml_path, r.stderr.strip()))
    return json.loads(r.stdout)


def run_sim(epochfs_bin, toml_path, extra=()):
    """The simulator's JSON for the workload (extra: more options), or (None,
    why) when this binary has no working `sim` subcommand."""
    try:
        r = subprocess.run([epochfs_bin, "sim", toml_path, "--json", *extra], capture_output=True,
                           text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if r.returncode != 0:
        lines = (r.stderr.strip() or r.stdout.strip()).splitlines()
        return None, lines[-1] if lines else "exit %d" % r.returncode
    try:
        doc = json.loads(r.stdout)
        return {run["policy"]: run for run in doc["runs"]}, None
    except (ValueError, KeyError, TypeError) as e:
        return None, "unreadable output: %s" % e
