"""Shared helpers for epochfs real-mount integration tests.

Every test case that mounts something derives from MountTestCase. Mounts are
always torn down by cleanups registered *before* the daemon starts
(fusermount3 -u, then lazy unmount, then SIGKILL of the process), so a failing
or crashing test never leaves a mount behind.

Binaries:
  EPOCHFS_BIN  the epochfs executable (default: <repo>/build/src/epochfs)
  FAULTFS_BIN  the faultfs fixture     (default: <repo>/build/tests/integration/faultfs)

Exit status 77 (meson: SKIP) only when /dev/fuse is missing or we are not root.
Standard library only; runs with Debian's /usr/bin/python3.
"""

import contextlib
import errno
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
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP_EXIT = 77

VERSION_TEXT = "epochfs 0.1.0\nprotocol 1\n"
STATS_INT_FIELDS = ("budget", "used", "hits", "misses", "bytes_read_lower",
                    "objects", "evictions", "lower_errors")

# Every wait in these tests is a bound for liveness (the wait ends as soon as
# what it waits for holds), never a measurement: the bounds are scaled by
# EPOCHFS_TEST_TIME_SCALE (default 4) so that a loaded machine or a sanitizer
# build, which can be ten times slower, only makes a passing test slower.
TIME_SCALE = float(os.environ.get("EPOCHFS_TEST_TIME_SCALE", "4"))
MOUNT_TIMEOUT = 15.0 * TIME_SCALE   # seconds until .epochfs/version must be readable
EXIT_TIMEOUT = 10.0 * TIME_SCALE    # seconds for a daemon to exit after unmount / signal


def epochfs_bin():
    return os.environ.get("EPOCHFS_BIN") or os.path.join(REPO, "build", "src", "epochfs")


def faultfs_bin():
    return os.environ.get("FAULTFS_BIN") or os.path.join(
        REPO, "build", "tests", "integration", "faultfs")


def latencyfs_bin():
    """The benchmarks' latency store (tests/bench/latencyfs.cc)."""
    return os.environ.get("LATENCYFS_BIN") or os.path.join(
        REPO, "build", "tests", "bench", "latencyfs")


def skip_reason():
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse missing"
    if os.geteuid() != 0:
        return "not root"
    return None


def main():
    """unittest.main() with the meson SKIP convention."""
    reason = skip_reason()
    if reason:
        print("SKIP: " + reason)
        sys.exit(SKIP_EXIT)
    unittest.main(verbosity=2)


# --------------------------------------------------------------------------
# /proc/mounts
# --------------------------------------------------------------------------

def _unescape_mounts(field):
    # /proc/mounts escapes space, tab, newline and backslash as octal.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_entries(path):
    """All /proc/mounts entries (source, target, fstype, options) at path."""
    path = os.path.realpath(path)
    found = []
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and _unescape_mounts(parts[1]) == path:
                found.append((_unescape_mounts(parts[0]), path, parts[2], parts[3]))
    return found


def is_mounted(path):
    return bool(mount_entries(path))


def force_unmount(path):
    """Best effort: leave nothing mounted at path."""
    for _ in range(5):
        if not is_mounted(path):
            return
        subprocess.run(["fusermount3", "-u", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if not is_mounted(path):
            return
        subprocess.run(["fusermount3", "-uz", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        subprocess.run(["umount", "-l", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        time.sleep(0.1)


def wait_for(pred, timeout, interval=0.05):
    """pred()'s first true value, or its last false one once timeout (scaled
    by TIME_SCALE) has passed."""
    deadline = time.monotonic() + timeout * TIME_SCALE
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            return v
        time.sleep(interval)


# --------------------------------------------------------------------------
# Data helpers
# --------------------------------------------------------------------------

def det_bytes(size, seed):
    """Deterministic pseudo-random bytes (same seed+size -> same bytes)."""
    return random.Random(seed * 1000003 + size).randbytes(size)


def write_file(path, data, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def cached_bytes(path):
    """The bytes of `path` in the kernel's page cache (fincore(1))."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip() or 0)


def drop_pages(paths):
    """The kernel drops the page cache of `paths` (POSIX_FADV_DONTNEED), as its
    reclaim would, and only theirs: tests running beside keep their caches."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def rss_bytes(pid):
    """A process's resident set (VmRSS), in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for pid %d" % pid)


@contextlib.contextmanager
def asan_frees_at_once():
    """A daemon started inside returns freed memory to the system at once
    under AddressSanitizer (whose quarantine otherwise keeps it in the
    process); no effect on other builds."""
    old = os.environ.get("ASAN_OPTIONS")
    os.environ["ASAN_OPTIONS"] = ":".join(filter(None, [
        old, "quarantine_size_mb=0", "allocator_release_to_os_interval_ms=100"]))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("ASAN_OPTIONS", None)
        else:
            os.environ["ASAN_OPTIONS"] = old


def read_file_raw(path, bufsize=256 * 1024):
    """open + read(2) until EOF + close, without Python's buffering layer."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            b = os.read(fd, bufsize)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# A running epochfs
# --------------------------------------------------------------------------

class Daemon:
    """An epochfs process started in the foreground (-f) by MountTestCase.mount."""

    def __init__(self, proc, lower, mnt, stderr_path):
        self.proc = proc
        self.lower = lower
        self.mnt = mnt
        self.stderr_path = stderr_path

    def path(self, *rel):
        return os.path.join(self.mnt, *rel)

    def stats(self):
        with open(self.path(".epochfs", "stats")) as f:
            return json.load(f)

    def version(self):
        with open(self.path(".epochfs", "version")) as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def stderr_text(self):
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def unmount(self):
        """fusermount3 -u; returns the daemon's exit status."""
        r = subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("fusermount3 -u failed: %s" % r.stderr.strip())
        return self.wait_exit()

    def wait_exit(self, timeout=EXIT_TIMEOUT):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("epochfs did not exit within %.0fs" % timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass


class MountTestCase(unittest.TestCase):
    """Base class: temp dirs, daemon start, guaranteed teardown."""

    def setUp(self):
        reason = skip_reason()
        if reason:
            self.skipTest(reason)
        self.tmp = tempfile.mkdtemp(prefix="epochfs-it-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    # -- temp paths ---------------------------------------------------------
    def make_dir(self, name):
        p = os.path.join(self.tmp, name)
        os.makedirs(p, exist_ok=True)
        return p

    def dataset(self, sizes, seed=1):
        """LOWER with files f000.bin, f001.bin, ... of `sizes` bytes (det_bytes
        from seed, seed + 1, ...); returns (lower, {name: bytes})."""
        lower = self.make_dir("lower")
        want = {}
        for i, size in enumerate(sizes):
            name = "f%03d.bin" % i
            want[name] = det_bytes(size, seed + i)
            write_file(os.path.join(lower, name), want[name])
        return lower, want

    def make_mountpoint(self, name="mnt"):
        p = os.path.join(self.tmp, name)
        n = 1
        while os.path.exists(p):
            n += 1
            p = os.path.join(self.tmp, "%s%d" % (name, n))
        os.makedirs(p)
        # Registered after rmtree, so it runs before it (cleanups are LIFO).
        self.addCleanup(force_unmount, p)
        return p

    # -- epochfs ------------------------------------------------------------
    def epochfs_cmd(self, lower, mnt, opts=None, extra=None, foreground=True):
        cmd = [epochfs_bin()]
        if foreground:
            cmd.append("-f")
        # Two copies unless a test asks for one (test_one_copy.py,
        # test_no_open.py): with one copy a page the kernel reclaims on its
        # own is read again from LOWER, and the checks that a hot pass reads
        # nothing from LOWER would depend on the machine's memory pressure.
        if not any(o.startswith(("fuse.one_copy=", "fuse.no_open=")) for o in opts or ()):
            opts = list(opts or ()) + ["fuse.one_copy=false"]
        if opts:
            cmd += ["-o", ",".join(opts)]
        if extra:
            cmd += list(extra)
        # Hermetic: the host's SYSCONFDIR/epochfs/epochfs.toml, read by
        # default when it exists, is not read unless a test names a file.
        names_config = "--config" in (extra or ()) or any(
            o.startswith("config=") for group in opts or () for o in group.split(","))
        if not names_config:
            cmd.append("--no-config")
        cmd += [lower, mnt]
        return cmd

    def mount(self, lower, mnt=None, opts=None, extra=None, check=True, preexec_fn=None):
        """Start `epochfs -f [-o opts] [extra] lower mnt`; wait until ready.
        preexec_fn runs in the daemon's process before it starts (limits)."""
        if mnt is None:
            mnt = self.make_mountpoint()
        binary = epochfs_bin()
        if not os.access(binary, os.X_OK):
            self.fail("epochfs binary not found: %s (set EPOCHFS_BIN)" % binary)
        stderr_path = os.path.join(self.tmp, "epochfs-%d.stderr" % time.monotonic_ns())
        errf = open(stderr_path, "wb")
        proc = subprocess.Popen(self.epochfs_cmd(lower, mnt, opts, extra),
                                stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
                                preexec_fn=preexec_fn)
        errf.close()
        d = Daemon(proc, lower, mnt, stderr_path)
        self.addCleanup(self.assert_no_sanitizer_report, d)  # runs last
        self.addCleanup(d.kill)
        self.addCleanup(force_unmount, mnt)
        if check:
            self.wait_ready(d)
        return d

    def assert_no_sanitizer_report(self, d):
        """A sanitizer build of the daemon reports on stderr: any report fails."""
        text = d.stderr_text()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                       "WARNING: ThreadSanitizer", "runtime error:"):
            if marker in text:
                self.fail("sanitizer report from epochfs:\n" + text[-4000:])

    def wait_ready(self, d, timeout=MOUNT_TIMEOUT):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if d.proc.poll() is not None:
                self.fail("epochfs exited with %s before the mount was ready; stderr:\n%s"
                          % (d.proc.returncode, d.stderr_text()))
            if is_mounted(d.mnt):
                try:
                    if d.version() == VERSION_TEXT:
                        return
                    last = "version=%r" % d.version()
                except OSError as e:
                    last = e
            time.sleep(0.05)
        self.fail("mount not ready after %.0fs (last: %s); stderr:\n%s"
                  % (timeout, last, d.stderr_text()))

    def assert_stats_sane(self, st):
        for k in STATS_INT_FIELDS:
            self.assertIn(k, st)
            self.assertIsInstance(st[k], int, k)
            self.assertNotIsInstance(st[k], bool, k)
            self.assertGreaterEqual(st[k], 0, k)
        self.assertIsInstance(st.get("policy"), str)
        self.assertLessEqual(st["used"], st["budget"], "used > budget: %r" % st)
        ram = st["tiers"]["ram"]
        self.assertIsInstance(ram["objects"], int)
        self.assertIsInstance(ram["bytes"], int)
        self.assertLessEqual(ram["bytes"], st["budget"], "ram.bytes > budget: %r" % st)

    # -- faultfs ------------------------------------------------------------
    def mount_faultfs(self, source, extra=()):
        """Mount faultfs(source) on a temp dir (`extra`: more libfuse options);
        returns its mountpoint."""
        return self._mount_fixture("faultfs", faultfs_bin(), "FAULTFS_BIN", source, extra)

    def mount_latencyfs(self, source, extra=()):
        """Mount latencyfs(source): every call waits SOURCE/.latency_ms, any
        number at once, counted as faultfs counts; returns its mountpoint."""
        return self._mount_fixture("latencyfs", latencyfs_bin(), "LATENCYFS_BIN", source, extra)

    def _mount_fixture(self, name, binary, env, source, extra):
        mnt = self.make_mountpoint(name)
        if not os.access(binary, os.X_OK):
            self.fail("%s fixture not found: %s (set %s)" % (name, binary, env))
        errp = os.path.join(self.tmp, "%s.stderr" % name)
        errf = open(errp, "wb")
        proc = subprocess.Popen([binary, source, mnt, "-f", "-o", "allow_other", *extra],
                                stdin=subprocess.DEVNULL, stdout=errf, stderr=errf)
        errf.close()

        def stop():
            force_unmount(mnt)
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self.addCleanup(stop)
        if not wait_for(lambda: is_mounted(mnt) or proc.poll() is not None, MOUNT_TIMEOUT) \
                or proc.poll() is not None:
            with open(errp, errors="replace") as f:
                self.fail("%s did not mount: %s" % (name, f.read()))
        return mnt

    def assert_errno(self, expected, fn, *args, **kwargs):
        """fn(*args) must raise OSError with errno in expected (int or tuple)."""
        if isinstance(expected, int):
            expected = (expected,)
        try:
            fn(*args, **kwargs)
        except OSError as e:
            self.assertIn(e.errno, expected, "%s%r: got %s, want %s" % (
                getattr(fn, "__name__", fn), args, errno.errorcode.get(e.errno, e.errno),
                "/".join(errno.errorcode[x] for x in expected)))
            return e
        self.fail("%s%r: succeeded, want %s" % (
            getattr(fn, "__name__", fn), args,
            "/".join(errno.errorcode[x] for x in expected)))


def as_user(uid, gid, fn):
    """Run fn() in a forked child with the given uid/gid; returns errno or 0."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            fn()
        except OSError as e:
            code = e.errno or 255
        except BaseException:
            code = 254
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


# --------------------------------------------------------------------------
# Forked loaders: a job's data-loader workers
# --------------------------------------------------------------------------

def fork_loaders(workers, loader, in_child=None):
    """Forks `workers` loader processes, children of the caller (the daemon
    counts their reads as the caller's job's). Loader w runs
    loader(w, cmd_fd, rep_fd), reading commands from cmd_fd and writing one
    JSON reply line per command to rep_fd; it exits 0, or 1 with the traceback
    on stderr. in_child(), when given, runs first in each child (to close what
    the loader must not hold). Returns [(pid, cmd_w, rep_file)]: the write end
    of each command pipe and each reply pipe as a text file."""
    loaders = []
    try:
        for w in range(workers):
            cr, cw = os.pipe()
            rr, rw = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    os.close(cw)
                    os.close(rr)
                    if in_child is not None:
                        in_child()
                    loader(w, cr, rw)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                os._exit(code)
            os.close(cr)
            os.close(rw)
            loaders.append((pid, cw, os.fdopen(rr, "r")))
    except BaseException:
        kill_loaders(loaders)  # the ones forked before the failure
        raise
    return loaders


def loader_epoch(loaders, k):
    """Tells every loader to read epoch k ("K\n"), then returns their replies
    (parsed JSON) in loader order. RuntimeError when a loader died."""
    for _, cw, _ in loaders:
        os.write(cw, b"%d\n" % k)
    replies = []
    for _, _, rf in loaders:
        line = rf.readline()
        if not line:
            raise RuntimeError("a loader died in epoch %d" % k)
        replies.append(json.loads(line))
    return replies


def stop_loaders(loaders):
    """Tells every loader to quit ("q"), closes its pipes and reaps it.
    Returns [(pid, wait status)] of the loaders that did not exit 0."""
    failed = []
    for pid, cw, rf in loaders:
        os.write(cw, b"q\n")
        os.close(cw)
        rf.close()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append((pid, status))
    return failed


def kill_loaders(loaders):
    """SIGKILLs and reaps loaders left behind by a failure (errors ignored)."""
    for pid, _, rf in loaders:
        rf.close()
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
