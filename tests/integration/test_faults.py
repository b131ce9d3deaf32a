#!/usr/bin/python3
"""Faults and limits: lower EIO (through the faultfs fixture), files that
vanish or shrink under the daemon, cache.consistency=open vs immutable, and
the memory budget (stats.used never exceeds stats.budget)."""

import errno
import json
import multiprocessing
import os
import select
import time

import epochfs_test as et

KiB = 1024
MiB = 1024 * KiB
FORK = multiprocessing.get_context("fork")


def read_or_errno(path):
    """(bytes, None) or (None, errno) for open+read-to-EOF+close."""
    try:
        return et.read_file_raw(path), None
    except OSError as e:
        return None, e.errno


class EioTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.src = self.make_dir("src")
        self.good = {}
        for i, size in enumerate((0, 1, 5000, 110 * KiB, 2 * MiB + 7)):
            name = "good_%d.bin" % size
            self.good[name] = et.det_bytes(size, 300 + i)
            et.write_file(os.path.join(self.src, name), self.good[name])
        et.write_file(os.path.join(self.src, "bad_EIO.bin"), et.det_bytes(200 * KiB, 9))
        et.write_file(os.path.join(self.src, "sub", "deep_EIO_small"), b"tiny")
        self.faultmnt = self.mount_faultfs(self.src)

    def test_fixture(self):
        # The fixture itself: good files pass through, *EIO* files fail on read.
        for name, data in self.good.items():
            self.assertEqual(et.read_file_raw(os.path.join(self.faultmnt, name)), data)
        self.assertEqual(os.stat(os.path.join(self.faultmnt, "bad_EIO.bin")).st_size, 200 * KiB)
        _, err = read_or_errno(os.path.join(self.faultmnt, "bad_EIO.bin"))
        self.assertEqual(err, errno.EIO)

    def check_eio_mount(self, opts):
        d = self.mount(self.faultmnt, opts=opts)
        # stat works: metadata comes from LOWER's getattr.
        self.assertEqual(os.stat(d.path("bad_EIO.bin")).st_size, 200 * KiB)
        for rel in ("bad_EIO.bin", os.path.join("sub", "deep_EIO_small")):
            for attempt in range(3):
                with self.subTest(rel=rel, attempt=attempt):
                    data, err = read_or_errno(d.path(rel))
                    self.assertEqual(err, errno.EIO, "read gave %r" % (
                        data[:20] if data is not None else None))
        self.assertTrue(d.alive(), d.stderr_text())
        for name, data in self.good.items():
            self.assertEqual(et.read_file_raw(d.path(name)), data, name)
        self.assertEqual(d.version(), et.VERSION_TEXT)
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertGreaterEqual(st["lower_errors"], 1, st)
        return d

    def test_eio_default(self):
        self.check_eio_mount(None)

    def test_eio_lru(self):
        d = self.check_eio_mount(["cache.memory=64MiB", "cache.policy=lru"])
        # A failed load leaves nothing cached for that file.
        st = d.stats()
        self.assertLessEqual(st["objects"], len(self.good), st)

    def test_eio_consistency_open(self):
        self.check_eio_mount(["cache.consistency=open", "cache.policy=lru"])

    def test_eio_concurrent(self):
        d = self.mount(self.faultmnt, opts=["cache.memory=64MiB", "cache.policy=lru"])
        q = FORK.Queue()

        def child(wid):
            errs = []
            for rep in range(5):
                for name in sorted(self.good) + ["bad_EIO.bin"]:
                    data, err = read_or_errno(d.path(name))
                    if name == "bad_EIO.bin":
                        if err != errno.EIO:
                            errs.append("%d: bad file gave %s" % (wid, err or "data"))
                    elif err is not None or data != self.good[name]:
                        errs.append("%d: %s gave %s" % (wid, name, err or "wrong bytes"))
            q.put(errs)
        procs = [FORK.Process(target=child, args=(w,)) for w in range(8)]
        for p in procs:
            p.start()
        errors = []
        for _ in procs:
            errors += q.get(timeout=120 * et.TIME_SCALE)
        for p in procs:
            p.join()
        self.assertEqual(errors, [])
        self.assertTrue(d.alive())
        self.assertGreaterEqual(d.stats()["lower_errors"], 1)


def run_with_bound(fn, seconds):
    """fn() in a forked child, waited for at most `seconds` (a liveness
    bound): its errno (0: done), or -1 when it did not finish."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn()
        except OSError as e:
            code = e.errno or 255
        except BaseException:
            code = 254
        os._exit(code)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return -1


class HangTest(et.MountTestCase):
    """A LOWER that stops answering (faultfs: reads of *HANG* files block while
    SOURCE/.hang exists). Every LOWER call has a bound (lower.timeout): the
    reader gets ETIMEDOUT, the stuck call keeps a worker thread, not a FUSE
    thread, so other files still read; a reader that gets a signal it
    handles stops waiting with EINTR (FUSE INTERRUPT). Before, the readers
    hung for ever and, once every FUSE thread was stuck, so did the mount."""

    def setUp(self):
        super().setUp()
        self.src = self.make_dir("src")
        self.good = {"g%d.bin" % i: et.det_bytes(20000 + i, 40 + i) for i in range(8)}
        for name, data in self.good.items():
            et.write_file(os.path.join(self.src, name), data)
        self.hung = et.det_bytes(150 * KiB, 7)
        et.write_file(os.path.join(self.src, "a_HANG.bin"), self.hung)
        self.faultmnt = self.mount_faultfs(self.src)
        self.flag = os.path.join(self.src, ".hang")
        et.write_file(self.flag, b"")
        # Runs first (cleanups are LIFO): lets every stuck call finish.
        self.addCleanup(lambda: os.path.exists(self.flag) and os.unlink(self.flag))

    def readers(self, path, n, stat=False):
        """n forked readers of `path` (or of each path in the list `path`;
        os.stat instead of a read if `stat`); returns a function that
        collects each one's (errno or 0)."""
        pids = []
        paths = path if isinstance(path, list) else [path] * n
        for p in paths:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                if stat:
                    try:
                        os.stat(p)
                        err = 0
                    except OSError as e:
                        err = e.errno
                else:
                    _, err = read_or_errno(p)
                os.write(w, str(err or 0).encode())
                os._exit(0)
            os.close(w)
            pids.append((pid, r))

        def collect():
            out = []
            for pid, r in pids:
                out.append(int(os.read(r, 64) or b"-1"))
                os.close(r)
                os.waitpid(pid, 0)
            return out
        return collect

    def test_a_hung_lower_times_out_and_the_rest_still_reads(self):
        d = self.mount(self.faultmnt, opts=["lower.timeout=1", "lower.workers=2",
                                            "cache.policy=lru", "fuse.threads=4"])
        collect = self.readers(d.path("a_HANG.bin"), 6)  # more than the FUSE threads
        for name, data in self.good.items():
            self.assertEqual(et.read_file_raw(d.path(name)), data, name)
        self.assertEqual(collect(), [errno.ETIMEDOUT] * 6)
        st = d.stats()
        self.assertGreaterEqual(st["lower_timeouts"], 1, st)
        self.assertGreaterEqual(st["lower_stuck"], 1, st)
        self.assertIn("is LOWER hung?", d.stderr_text())
        # LOWER answers again: the stuck calls end, the file reads whole.
        os.unlink(self.flag)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_stuck"] == 0, 30), d.stats())
        self.assertEqual(et.read_file_raw(d.path("a_HANG.bin")), self.hung)
        self.assertTrue(d.alive())

    def test_the_root_and_the_control_tree_answer_while_lower_hangs(self):
        # Once the kernel's attributes of the root expire, every path walk
        # asks for them; with LOWER's root hung (faultfs: .hang_root), the
        # daemon answers with the root's last known attributes, so the control
        # tree and the mount's root keep answering, long before lower.timeout.
        d = self.mount(self.faultmnt, opts=["lower.timeout=60", "fuse.attr_timeout=0.2",
                                            "fuse.entry_timeout=0.2", "cache.policy=lru"])
        name, data = sorted(self.good.items())[0]
        self.assertEqual(et.read_file_raw(d.path(name)), data)
        before = os.stat(d.mnt)
        hang_root = os.path.join(self.src, ".hang_root")
        et.write_file(hang_root, b"")
        self.addCleanup(lambda: os.path.exists(hang_root) and os.unlink(hang_root))
        time.sleep(0.5)  # past the kernel's attribute timeout of the root
        jobs = d.path(".epochfs", "jobs")

        def walk():
            with open(d.path(".epochfs", "version")) as f:
                f.read()
            os.mkdir(os.path.join(jobs, "during"))
            os.rmdir(os.path.join(jobs, "during"))
            st = os.stat(d.mnt)
            if (st.st_mode, st.st_uid) != (before.st_mode, before.st_uid):
                raise OSError(errno.EPROTO, "root attributes changed")
        for _ in range(3):  # the first waits briefly for LOWER, then none do
            done = run_with_bound(walk, 30)
            self.assertEqual(done, 0, "a walk through the root while LOWER's root hangs")
            time.sleep(0.3)
        self.assertTrue(d.alive())
        os.unlink(hang_root)
        self.assertEqual(et.read_file_raw(d.path(name)), data)

    def test_a_hung_lookup_is_answered_by_the_watchdog(self):
        # faultfs blocks a stat of *STATHANG* names while .hang exists: a
        # lookup on a hung NFS server. Lookups run on the FUSE thread, watched
        # (lower.timeout's "inline calls"); the watchdog answers for them.
        names = ["s%d_STATHANG.bin" % i for i in range(4)]
        for n in names:
            et.write_file(os.path.join(self.src, n), et.det_bytes(1000, 3))
        d = self.mount(self.faultmnt, opts=["lower.timeout=1", "fuse.threads=4",
                                            "cache.policy=lru"])
        # Nothing is stuck yet: this lookup runs inline and the watchdog
        # answers it; the call stays inside faultfs.
        before = d.stats()["lower_inline_calls"]
        self.assertEqual(self.readers([d.path(names[0])], 1, stat=True)(), [errno.ETIMEDOUT])
        st = d.stats()
        self.assertEqual(st["lower_inline_calls"], before + 1, st)
        self.assertEqual(st["lower_timeouts"], 1, st)
        self.assertEqual(st["lower_stuck"], 1, st)
        # While it is stuck nothing runs inline: three more hung lookups go
        # to the workers and time out there. (Other files are not read
        # meanwhile: faultfs itself answers no lookup while one of its own
        # hangs; the read test above shows the rest of the mount serving.)
        collect = self.readers([d.path(n) for n in names[1:]], 3, stat=True)
        self.assertEqual(collect(), [errno.ETIMEDOUT] * 3)
        st = d.stats()
        self.assertEqual(st["lower_inline_calls"], before + 1, st)
        self.assertGreaterEqual(st["lower_timeouts"], 4, st)
        self.assertGreaterEqual(st["lower_stuck"], 4, st)
        self.assertIn("is LOWER hung?", d.stderr_text())
        # LOWER answers again: every stuck call ends, lookups run inline again.
        os.unlink(self.flag)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_stuck"] == 0, 30), d.stats())
        for n in names:
            self.assertEqual(os.stat(d.path(n)).st_size, 1000, n)
        self.assertGreater(d.stats()["lower_inline_calls"], before + 1)
        self.assertTrue(d.alive())

    def test_a_reader_interrupted_in_a_lookup_gets_eintr(self):
        import signal
        et.write_file(os.path.join(self.src, "x_STATHANG.bin"), b"x" * 10)
        d = self.mount(self.faultmnt, opts=["lower.timeout=600", "cache.policy=lru"])
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)

            class Interrupted(Exception):
                pass

            def handler(signum, frame):
                raise Interrupted()
            signal.signal(signal.SIGUSR1, handler)
            try:
                os.stat(d.path("x_STATHANG.bin"))
                out = b"stat"
            except Interrupted:
                out = b"interrupted"
            os.write(w, out)
            os._exit(0)
        os.close(w)
        try:
            # The daemon's FUSE thread is inside the LOWER stat for it.
            self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, 30),
                            d.stats())
            os.kill(pid, signal.SIGUSR1)
            ready = et.wait_for(lambda: select.select([r], [], [], 0)[0], 30)
            self.assertTrue(ready, "the reader did not stop waiting after its signal")
            self.assertEqual(os.read(r, 64), b"interrupted")
        finally:
            os.unlink(self.flag)
            os.close(r)
            os.waitpid(pid, 0)
        self.assertEqual(d.stats()["lower_interrupts"], 1)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_stuck"] == 0, 30), d.stats())
        self.assertEqual(os.stat(d.path("x_STATHANG.bin")).st_size, 10)
        self.assertTrue(d.alive())

    def test_a_reader_interrupted_gets_eintr(self):
        import signal
        d = self.mount(self.faultmnt, opts=["lower.timeout=600", "cache.policy=lru"])
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)

            class Interrupted(Exception):
                pass

            def handler(signum, frame):
                raise Interrupted()
            signal.signal(signal.SIGUSR1, handler)
            try:
                read_or_errno(d.path("a_HANG.bin"))
                out = b"read"
            except Interrupted:
                out = b"interrupted"
            os.write(w, out)
            os._exit(0)
        os.close(w)
        try:
            # The daemon is inside the LOWER read for it.
            self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, 30),
                            d.stats())
            os.kill(pid, signal.SIGUSR1)
            ready = et.wait_for(lambda: select.select([r], [], [], 0)[0], 30)
            self.assertTrue(ready, "the reader did not stop waiting after its signal")
            self.assertEqual(os.read(r, 64), b"interrupted")
        finally:
            os.unlink(self.flag)
            os.close(r)
            os.waitpid(pid, 0)
        self.assertEqual(d.stats()["lower_interrupts"], 1)
        self.assertEqual(et.read_file_raw(d.path("a_HANG.bin")), self.hung)
        self.assertTrue(d.alive())


class VanishTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        for i in range(4):
            et.write_file(os.path.join(self.lower, "f%d.bin" % i), et.det_bytes(150 * KiB, i))
        et.write_file(os.path.join(self.lower, "dir", "x.bin"), et.det_bytes(10 * KiB, 77))
        et.write_file(os.path.join(self.lower, "keep.bin"), et.det_bytes(64 * KiB, 99))

    def check_alive(self, d):
        self.assertTrue(d.alive(), d.stderr_text())
        self.assertEqual(et.read_file_raw(d.path("keep.bin")), et.det_bytes(64 * KiB, 99))
        self.assert_stats_sane(d.stats())

    def test_vanished_file(self):
        for opts in (["cache.policy=lru"], ["cache.consistency=open", "cache.policy=lru"], None):
            with self.subTest(opts=opts):
                p = os.path.join(self.lower, "f0.bin")
                et.write_file(p, et.det_bytes(150 * KiB, 0))
                d = self.mount(self.lower, opts=opts)
                os.stat(d.path("f0.bin"))             # looked up, never read
                os.unlink(p)
                data, err = read_or_errno(d.path("f0.bin"))
                self.assertIn(err, (errno.ENOENT, errno.EIO),
                              "vanished file gave %s" % ("data" if data is not None else err))
                self.check_alive(d)
                d.unmount()

    def test_directory_swapped_for_symlink_out_of_lower(self):
        # A lower directory replaced by a symlink to a place outside LOWER after
        # the kernel cached its lookups: the daemon resolves lower paths without
        # following symlinks, so the reader never gets the outside bytes. It
        # gets an error, or (immutable: the daemon opens files relative to a
        # descriptor it holds of their directory, src/store/held_dirs.h) the
        # bytes of the directory it looked up, renamed within LOWER.
        outside = self.make_dir("outside")
        et.write_file(os.path.join(outside, "f.bin"), b"SECRET-OUTSIDE-LOWER")
        inside = os.path.join(self.lower, "dir")
        old = et.det_bytes(5000, 3)
        et.write_file(os.path.join(inside, "f.bin"), old)
        # Only the immutable mode keeps the old lookup: with consistency=open
        # the kernel looks "dir" up again, sees the symlink and follows it
        # itself, exactly as a read of LOWER would.
        for mode in ("immutable",):
            with self.subTest(mode=mode):
                d = self.mount(self.lower, opts=["cache.consistency=" + mode, "cache.policy=lru"])
                os.stat(d.path("dir", "f.bin"))    # looked up, not read
                os.rename(inside, inside + ".old")
                os.symlink(outside, inside)
                data, err = read_or_errno(d.path("dir", "f.bin"))
                if data is not None:
                    self.assertEqual(data, old, "served bytes through a swapped-in symlink")
                else:
                    self.assertIn(err, (errno.ENOENT, errno.EIO, errno.ELOOP))
                # A name only the outside directory has: never reached.
                et.write_file(os.path.join(outside, "g.bin"), b"SECRET-OUTSIDE-LOWER")
                data, err = read_or_errno(d.path("dir", "g.bin"))
                self.assertIsNone(data, "served bytes through a swapped-in symlink: %r" % data)
                self.assertIn(err, (errno.ENOENT, errno.EIO, errno.ELOOP))
                self.check_alive(d)
                d.unmount()
                os.unlink(inside)
                os.rename(inside + ".old", inside)

    def test_vanished_after_cached(self):
        # consistency=open re-stats on open: a vanished file is gone, even if
        # its bytes are still cached. immutable may keep serving the old bytes.
        for mode in ("open", "immutable"):
            with self.subTest(mode=mode):
                p = os.path.join(self.lower, "f0.bin")
                old = et.det_bytes(150 * KiB, 0)
                et.write_file(p, old)
                d = self.mount(self.lower, opts=["cache.consistency=" + mode,
                                                 "cache.policy=lru", "cache.memory=64MiB"])
                self.assertEqual(et.read_file_raw(d.path("f0.bin")), old)
                self.assertEqual(d.stats()["objects"], 1)
                os.unlink(p)
                data, err = read_or_errno(d.path("f0.bin"))
                if mode == "open":
                    self.assertIn(err, (errno.ENOENT, errno.EIO),
                                  "vanished cached file gave %s"
                                  % ("old bytes" if data == old else data and len(data)))
                else:
                    self.assertTrue(data == old or err in (errno.ENOENT, errno.EIO),
                                    "immutable vanished: %s" % (err or len(data)))
                self.check_alive(d)
                d.unmount()

    def test_vanished_while_open(self):
        d = self.mount(self.lower, opts=["cache.policy=lru"])
        fd = os.open(d.path("f1.bin"), os.O_RDONLY)
        try:
            os.unlink(os.path.join(self.lower, "f1.bin"))
            try:
                data = os.pread(fd, 1 << 20, 0)
                # Served from an fd or a copy taken at open: must be the old bytes.
                self.assertEqual(data, et.det_bytes(150 * KiB, 1))
            except OSError as e:
                self.assertIn(e.errno, (errno.ENOENT, errno.EIO))
        finally:
            os.close(fd)
        self.check_alive(d)

    def test_vanished_directory(self):
        d = self.mount(self.lower)
        self.assertEqual(os.listdir(d.path("dir")), ["x.bin"])
        os.unlink(os.path.join(self.lower, "dir", "x.bin"))
        os.rmdir(os.path.join(self.lower, "dir"))
        try:
            # Under "immutable" a listing the daemon made is remembered
            # (store/known_lower.h): it may still name the file, which then
            # fails to read.
            names = os.listdir(d.path("dir"))
            self.assertIn(names, ([], ["x.bin"]))
        except OSError as e:
            self.assertIn(e.errno, (errno.ENOENT, errno.EIO, errno.ESTALE))
        data, err = read_or_errno(d.path("dir", "x.bin"))
        self.assertIn(err, (errno.ENOENT, errno.EIO, errno.ESTALE))
        self.check_alive(d)

    def test_replaced_by_directory(self):
        d = self.mount(self.lower)
        os.stat(d.path("f2.bin"))
        os.unlink(os.path.join(self.lower, "f2.bin"))
        os.mkdir(os.path.join(self.lower, "f2.bin"))
        data, err = read_or_errno(d.path("f2.bin"))
        self.assertIsNone(data, "directory served as file data")
        self.assertIn(err, (errno.ENOENT, errno.EIO, errno.EISDIR, errno.ESTALE))
        self.check_alive(d)

    def test_shrunk_file(self):
        d = self.mount(self.lower, opts=["cache.policy=lru"])
        old = et.det_bytes(150 * KiB, 3)
        self.assertEqual(os.stat(d.path("f3.bin")).st_size, len(old))
        new = b"short now"
        with open(os.path.join(self.lower, "f3.bin"), "r+b") as f:
            f.truncate(len(new))
            f.write(new)
        data, err = read_or_errno(d.path("f3.bin"))
        if data is not None:
            # Never zero padding or garbage: a prefix of the new bytes, or the
            # complete new file.
            self.assertTrue(new.startswith(data),
                            "shrunk file gave %d bytes: %r" % (len(data), data[:40]))
        else:
            self.assertIn(err, (errno.EIO, errno.ENOENT, errno.ESTALE))
        self.check_alive(d)


class ConsistencyTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.p = os.path.join(self.lower, "sample.bin")
        self.a = et.det_bytes(10000, 1)
        et.write_file(self.p, self.a)
        et.write_file(os.path.join(self.lower, "other.bin"), et.det_bytes(7000, 2))

    def replace_lower(self, data, mtime_shift_s=0):
        st = os.stat(self.p)
        with open(self.p, "r+b") as f:
            f.truncate(0)
            f.write(data)
        if mtime_shift_s:
            t = st.st_mtime_ns + mtime_shift_s * 10**9
            os.utime(self.p, ns=(t, t))

    def test_open_serves_fresh(self):
        d = self.mount(self.lower, opts=["cache.consistency=open", "cache.policy=lru",
                                         "cache.memory=64MiB"])
        self.assertEqual(et.read_file_raw(d.path("sample.bin")), self.a)
        self.assertEqual(et.read_file_raw(d.path("sample.bin")), self.a)
        s1 = d.stats()
        self.assertEqual((s1["misses"], s1["hits"]), (1, 1), s1)
        # Bigger file.
        b = et.det_bytes(25000, 2)
        self.replace_lower(b, 3)
        self.assertEqual(et.read_file_raw(d.path("sample.bin")), b)
        self.assertEqual(os.stat(d.path("sample.bin")).st_size, len(b))
        # Smaller file.
        c = et.det_bytes(3000, 3)
        self.replace_lower(c, 6)
        self.assertEqual(et.read_file_raw(d.path("sample.bin")), c)
        with open(d.path("sample.bin"), "rb") as f:
            self.assertEqual(f.read(), c)
        # Same size, only mtime differs.
        e = et.det_bytes(3000, 4)
        self.replace_lower(e, 9)
        self.assertEqual(et.read_file_raw(d.path("sample.bin")), e)
        s2 = d.stats()
        self.assertGreaterEqual(s2["misses"], 4, s2)
        # Unchanged file: a hit again, bytes read from LOWER unchanged.
        self.assertEqual(et.read_file_raw(d.path("sample.bin")), e)
        s3 = d.stats()
        self.assertEqual(s3["misses"], s2["misses"], (s2, s3))
        self.assertEqual(s3["bytes_read_lower"], s2["bytes_read_lower"], (s2, s3))
        self.assert_stats_sane(s3)
        self.assertLessEqual(s3["objects"], 1)

    def test_open_while_other_fd_open(self):
        d = self.mount(self.lower, opts=["cache.consistency=open", "cache.policy=lru"])
        fd = os.open(d.path("sample.bin"), os.O_RDONLY)
        try:
            first = os.pread(fd, 1 << 20, 0)
            self.assertEqual(first, self.a)
            b = et.det_bytes(12000, 5)
            self.replace_lower(b, 3)
            self.assertEqual(et.read_file_raw(d.path("sample.bin")), b)
        finally:
            os.close(fd)
        self.assertTrue(d.alive())

    def test_immutable_serves_old_or_new(self):
        d = self.mount(self.lower, opts=["cache.consistency=immutable", "cache.policy=lru",
                                         "cache.memory=64MiB"])
        self.assertEqual(et.read_file_raw(d.path("sample.bin")), self.a)
        b = et.det_bytes(10000, 7)
        self.replace_lower(b, 3)
        got = et.read_file_raw(d.path("sample.bin"))
        self.assertIn(got, (self.a, b), "immutable: neither old nor new bytes")
        self.assertTrue(d.alive())


    def test_immutable_grown_file_is_never_served_cut(self):
        # The kernel holds the old size (attributes cached for a day under
        # "immutable"); the file is not in the cache. The open sees the lower
        # file changed, the kernel looks the name up again, and the reader
        # gets the whole new file: never the old size's prefix of it.
        d = self.mount(self.lower, opts=["cache.consistency=immutable", "cache.policy=lru",
                                         "cache.memory=64MiB", "fuse.attr_timeout=86400",
                                         "fuse.entry_timeout=86400"])
        self.assertEqual(os.stat(d.path("sample.bin")).st_size, len(self.a))
        grown = self.a + et.det_bytes(5000, 8)
        with open(self.p, "ab") as f:
            f.write(grown[len(self.a):])
        self.assertEqual(et.read_file_raw(d.path("sample.bin")), grown)
        self.assertEqual(os.stat(d.path("sample.bin")).st_size, len(grown))
        # Changed again while cached: the cached version whole (what
        # "immutable" trusts), or the new bytes whole; never a mix.
        short = et.det_bytes(4000, 9)
        self.replace_lower(short, 3)
        self.assertIn(et.read_file_raw(d.path("sample.bin")), (grown, short))
        self.assertTrue(d.alive())

class PermissionTest(et.MountTestCase):
    """On a shared mount (allow_other) under "immutable", a chmod or chown in
    LOWER reaches every user within fuse.permission_timeout, although the
    dataset's timeouts are a day: the kernel checks permissions against the
    owner and mode it holds (before, it held them for fuse.attr_timeout)."""

    NOBODY = 65534

    def test_mode_and_owner_changes_in_lower_are_seen_within_the_bound(self):
        lower = self.make_dir("lower")
        os.chmod(self.tmp, 0o755)
        os.chmod(lower, 0o755)
        p = os.path.join(lower, "a.bin")
        data = et.det_bytes(9000, 3)
        et.write_file(p, data)
        os.chmod(p, 0o644)
        d = self.mount(lower, opts=["allow_other", "cache.consistency=immutable",
                                    "fuse.attr_timeout=86400", "fuse.entry_timeout=86400",
                                    "fuse.permission_timeout=1"])
        m = d.path("a.bin")

        def read():
            with open(m, "rb") as f:
                if f.read() != data:
                    raise OSError(errno.EIO, "wrong bytes")
        self.assertEqual(et.as_user(self.NOBODY, self.NOBODY, read), 0)
        self.assertEqual(et.read_file_raw(m), data)  # cached now
        os.chmod(p, 0o600)
        # Seen within the bound (1 s; the wait allows far more on a busy machine).
        refused = et.wait_for(lambda: et.as_user(self.NOBODY, self.NOBODY, read) == errno.EACCES,
                              30)
        self.assertTrue(refused, "nobody still reads a file chmod 600 in LOWER")
        os.chown(p, self.NOBODY, self.NOBODY)
        owner = et.wait_for(lambda: os.stat(m).st_uid == self.NOBODY, 30)
        self.assertTrue(owner, "the chown in LOWER is not seen")
        self.assertEqual(et.as_user(self.NOBODY, self.NOBODY, read), 0)
        self.assertTrue(d.alive())


class BudgetTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.data = {}
        for i in range(24):
            name = "img_%02d.bin" % i
            self.data[name] = et.det_bytes(150 * KiB + i * 100, 500 + i)
        self.data["huge.bin"] = et.det_bytes(3 * MiB, 999)      # bigger than the budget
        self.data["exact.bin"] = et.det_bytes(MiB, 998)         # exactly the budget
        for name, data in self.data.items():
            et.write_file(os.path.join(self.lower, name), data)

    def check_invariants(self, st, budget):
        self.assert_stats_sane(st)
        self.assertEqual(st["budget"], budget)
        self.assertLessEqual(st["used"], budget, st)
        self.assertLessEqual(st["tiers"]["ram"]["bytes"], budget, st)

    def test_sequential(self):
        d = self.mount(self.lower, opts=["cache.memory=1MiB", "cache.policy=lru"])
        for rep in range(3):
            for name in sorted(self.data):
                self.assertEqual(et.read_file_raw(d.path(name)), self.data[name], name)
                self.check_invariants(d.stats(), MiB)
        st = d.stats()
        self.assertGreater(st["evictions"], 0, st)
        self.assertGreater(st["misses"], 26, st)
        self.assertLessEqual(st["objects"], MiB // (150 * KiB) + 1, st)

    def test_default_policy(self):
        d = self.mount(self.lower, opts=["cache.memory=1MiB"])
        for rep in range(2):
            for name in sorted(self.data):
                self.assertEqual(et.read_file_raw(d.path(name)), self.data[name], name)
                self.check_invariants(d.stats(), MiB)

    def test_concurrent_with_poller(self):
        budget = MiB
        d = self.mount(self.lower, opts=["cache.memory=1MiB", "cache.policy=lru"])
        q = FORK.Queue()
        stop = FORK.Event()

        def reader(wid):
            errs = []
            names = sorted(self.data)
            for rep in range(4):
                for name in names[wid % len(names):] + names[:wid % len(names)]:
                    data, err = read_or_errno(d.path(name))
                    if data != self.data[name]:
                        errs.append("%d: %s: %s" % (wid, name, err or "wrong bytes"))
            q.put(("reader", errs))

        def poller():
            errs, n = [], 0
            while not stop.is_set():
                try:
                    with open(d.path(".epochfs", "stats")) as f:
                        st = json.load(f)
                    n += 1
                    if st["used"] > st["budget"] or st["budget"] != budget \
                            or st["tiers"]["ram"]["bytes"] > budget:
                        errs.append("budget violated: %r" % st)
                except (OSError, ValueError) as e:
                    errs.append("stats: %r" % e)
                if len(errs) > 5:
                    break
                time.sleep(0.002)
            q.put(("poller", errs + ([] if n > 10 else ["poller only polled %d times" % n])))

        readers = [FORK.Process(target=reader, args=(w,)) for w in range(8)]
        pol = FORK.Process(target=poller)
        pol.start()
        for p in readers:
            p.start()
        errors = []
        for _ in readers:
            errors += q.get(timeout=200 * et.TIME_SCALE)[1]
        stop.set()
        errors += q.get(timeout=30 * et.TIME_SCALE)[1]
        for p in readers + [pol]:
            p.join()
        self.assertEqual(errors, [])
        st = d.stats()
        self.check_invariants(st, budget)
        self.assertGreater(st["evictions"], 0, st)
        self.assertTrue(d.alive())


if __name__ == "__main__":
    et.main()
