#!/usr/bin/python3
"""Byte-exactness: every byte read through the mount equals LOWER, for varied
sizes and access patterns, with >= 8 concurrent reader processes over
repeated passes (cold stampedes, hot hits, eviction churn), plus the hit /
miss accounting of .epochfs/stats."""

import errno
import hashlib
import mmap
import multiprocessing
import os
import random
import threading

import epochfs_test as et

KiB = 1024
MiB = 1024 * KiB

EDGE_SIZES = [0, 1, 2, 100, 4095, 4096, 4097, 65535, 65536, 65537, 110 * KiB,
              131071, 131072, 131073, MiB - 1, MiB, 3 * MiB, 5 * MiB + 123]
READERS = 8
FORK = multiprocessing.get_context("fork")


def build_lower(root, n_small=200, seed=11):
    """{rel: (size, sha256)} of a LOWER with edge sizes and many small files."""
    meta = {}
    rng = random.Random(seed)
    for i, size in enumerate(EDGE_SIZES):
        rel = os.path.join("edge", "size_%08d.bin" % size)
        data = et.det_bytes(size, i + 1)
        et.write_file(os.path.join(root, rel), data)
        meta[rel] = (size, hashlib.sha256(data).hexdigest())
    for i in range(n_small):
        size = rng.choice([rng.randint(1, 4 * KiB), rng.randint(4 * KiB, 200 * KiB),
                           110 * KiB])
        rel = os.path.join("class_%d" % (i % 5), "img_%04d.bin" % i)
        data = et.det_bytes(size, 1000 + i)
        et.write_file(os.path.join(root, rel), data)
        meta[rel] = (size, hashlib.sha256(data).hexdigest())
    return meta


def first_diff(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))


def check_file(mnt, lower, rel, size, digest, method, rng):
    """Read rel through the mount with `method`; returns an error string or None."""
    path = os.path.join(mnt, rel)
    try:
        if method == "raw":
            data = et.read_file_raw(path)
        elif method == "buffered":
            with open(path, "rb") as f:
                data = f.read()
        elif method == "chunks":
            fd = os.open(path, os.O_RDONLY)
            try:
                parts = []
                while True:
                    b = os.read(fd, 7919)
                    if not b:
                        break
                    parts.append(b)
                data = b"".join(parts)
            finally:
                os.close(fd)
        elif method == "pread":
            fd = os.open(path, os.O_RDONLY)
            lfd = os.open(os.path.join(lower, rel), os.O_RDONLY)
            try:
                if os.fstat(fd).st_size != size:
                    return "%s: fstat size %d != %d" % (rel, os.fstat(fd).st_size, size)
                for _ in range(6):
                    off = rng.randint(0, size + 5000)
                    ln = rng.choice([1, 17, 4096, 65536, 200000, 1 << 20])
                    got = os.pread(fd, ln, off)
                    want = os.pread(lfd, ln, off)
                    if got != want:
                        return "%s: pread(%d, %d) len %d != %d, first diff at %d" % (
                            rel, ln, off, len(got), len(want), first_diff(got, want))
                if os.pread(fd, 10, size) != b"":
                    return "%s: pread at EOF returned data" % rel
                return None
            finally:
                os.close(fd)
                os.close(lfd)
        else:
            raise ValueError(method)
    except OSError as e:
        return "%s (%s): %s" % (rel, method, e)
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        want = et.read_file(os.path.join(lower, rel))
        return "%s (%s): got %d bytes, want %d, first diff at %d" % (
            rel, method, len(data), size, first_diff(data, want))
    return None


def reader_proc(args):
    """One reader process: `passes` shuffled passes over the whole list."""
    wid, mnt, lower, meta, passes, methods = args
    rng = random.Random(wid * 7 + 3)
    errors = []
    names = sorted(meta)
    for _ in range(passes):
        rng.shuffle(names)
        for rel in names:
            size, digest = meta[rel]
            err = check_file(mnt, lower, rel, size, digest, rng.choice(methods), rng)
            if err:
                errors.append("reader %d: %s" % (wid, err))
                if len(errors) > 20:
                    return errors
    return errors


def stampede_proc(args):
    """All readers wait at the barrier, then read the same file at once."""
    wid, mnt, lower, rels, meta, barrier = args
    rng = random.Random(wid)
    errors = []
    for rel in rels:
        barrier.wait(timeout=60 * et.TIME_SCALE)
        size, digest = meta[rel]
        err = check_file(mnt, lower, rel, size, digest, "raw", rng)
        if err:
            errors.append("reader %d: %s" % (wid, err))
    return errors


def parallel(fn, arglist, timeout=240 * et.TIME_SCALE):
    """Run fn(args) in one forked process per args; returns all error strings.
    A child that crashes or hangs is an error too."""
    q = FORK.Queue()

    def child(i, args):
        try:
            errs = fn(args)
        except BaseException as e:  # report, never hang the parent
            errs = ["child %d raised %r" % (i, e)]
        q.put((i, errs))

    procs = [FORK.Process(target=child, args=(i, a)) for i, a in enumerate(arglist)]
    for p in procs:
        p.start()
    errors, seen = [], set()
    try:
        for _ in procs:
            i, errs = q.get(timeout=timeout)
            seen.add(i)
            errors.extend(errs)
    except Exception as e:
        errors.append("children %s did not report: %r"
                      % (sorted(set(range(len(procs))) - seen), e))
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join()
    return errors


def run_readers(mnt, lower, meta, passes, methods=("raw", "buffered", "chunks", "pread"),
                readers=READERS):
    return parallel(reader_proc, [(w, mnt, lower, meta, passes, methods)
                                  for w in range(readers)])


class ConcurrentReadTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.meta = build_lower(self.lower)

    def test_readers_default_config(self):
        d = self.mount(self.lower)
        errors = run_readers(d.mnt, self.lower, self.meta, passes=3)
        self.assertEqual(errors, [])
        self.assertTrue(d.alive())
        self.assert_stats_sane(d.stats())

    def test_readers_lru_big_budget(self):
        d = self.mount(self.lower, opts=["cache.memory=256MiB", "cache.policy=lru"])
        errors = run_readers(d.mnt, self.lower, self.meta, passes=3)
        self.assertEqual(errors, [])
        st = d.stats()
        self.assert_stats_sane(st)
        # Everything fits: each file is loaded from LOWER about once, the rest
        # are hits. (Concurrent first opens may each count as a miss.)
        total = sum(s for s, _ in self.meta.values())
        n = len(self.meta)
        self.assertGreaterEqual(st["bytes_read_lower"], total)
        self.assertLessEqual(st["bytes_read_lower"], total * READERS)
        self.assertEqual(st["evictions"], 0, st)
        self.assertGreater(st["hits"], n, st)
        self.assertGreaterEqual(st["hits"] + st["misses"], n * READERS * 3 * 0.9, st)

    def test_readers_small_budget_churn(self):
        d = self.mount(self.lower, opts=["cache.memory=2MiB", "cache.policy=lru"])
        errors = run_readers(d.mnt, self.lower, self.meta, passes=2)
        self.assertEqual(errors, [])
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertEqual(st["budget"], 2 * MiB)
        self.assertGreater(st["evictions"], 0, st)

    def test_cold_stampede(self):
        d = self.mount(self.lower, opts=["cache.memory=64MiB", "cache.policy=lru"])
        rels = [os.path.join("edge", "size_%08d.bin" % s)
                for s in (5 * MiB + 123, 3 * MiB, 110 * KiB, 4096, 1, 0, MiB)]
        barrier = FORK.Barrier(READERS)
        errors = parallel(stampede_proc, [(w, d.mnt, self.lower, rels, self.meta, barrier)
                                          for w in range(READERS)])
        self.assertEqual(errors, [])
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertLessEqual(st["objects"], len(rels))

    def test_threads_one_process(self):
        d = self.mount(self.lower, opts=["cache.memory=8MiB", "cache.policy=lru"])
        errors = []
        lock = threading.Lock()

        def run(wid):
            errs = reader_proc((wid, d.mnt, self.lower, self.meta, 2, ("raw", "pread")))
            with lock:
                errors.extend(errs)
        threads = [threading.Thread(target=run, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assert_stats_sane(d.stats())


class BlockTest(et.MountTestCase):
    """A file larger than the largest object cached whole (a quarter of the
    budget) is cached in blocks of cache.block_size: byte-exact at every block
    boundary and in the short last block under concurrent readers, within the
    budget, hits when read again, and never a mix of two versions."""

    BLOCK = 64 * KiB

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.data = et.det_bytes(3 * MiB + 12345, 77)  # 48 blocks and a short one
        et.write_file(os.path.join(self.lower, "shard.tar"), self.data)

    def test_block_edges_exact_under_concurrent_readers(self):
        # 8 MiB: 2 MiB is the largest whole object, so the 3 MiB file goes in
        # 64 KiB blocks, which all fit.
        d = self.mount(self.lower, opts=["cache.memory=8MiB", "cache.block_size=64KiB"])
        data, size, b = self.data, len(self.data), self.BLOCK
        edges = sorted({max(0, k * b + dx) for k in range(size // b + 2) for dx in (-1, 0, 1)})

        def reader(w):
            rng = random.Random(w)
            errs = []
            fd = os.open(d.path("shard.tar"), os.O_RDONLY)
            try:
                for i in range(400):
                    off = rng.choice(edges) if i % 2 else rng.randrange(size + b)
                    n = rng.choice([1, 17, b - 1, b, b + 1, 3 * b + 5, 200 * KiB])
                    got = os.pread(fd, n, off)
                    if got != data[off:off + n]:
                        errs.append("reader %d: pread(%d, %d) gave %d bytes, first diff at %d"
                                    % (w, n, off, len(got), first_diff(got, data[off:off + n])))
                os.lseek(fd, 0, os.SEEK_SET)
                whole = b"".join(iter(lambda: os.read(fd, 100 * KiB + 7), b""))
                if whole != data:
                    errs.append("reader %d: sequential read differs at %d"
                                % (w, first_diff(whole, data)))
            finally:
                os.close(fd)
            return errs

        self.assertEqual(parallel(reader, range(READERS)), [])
        st = d.stats()
        self.assert_stats_sane(st)
        blocks = -(-size // b)
        self.assertEqual((st["streamed_opens"], st["streamed_bytes"]), (0, 0), st)
        self.assertEqual((st["objects"], st["used"]), (blocks, size), st)
        # Each block loaded once, read-ahead and readers' loads joined.
        self.assertEqual((st["misses"], st["bytes_read_lower"]), (blocks, size), st)
        # Read again by a new open: every block a hit, nothing from LOWER.
        lower_before, hits_before = st["bytes_read_lower"], st["hits"]
        with open(d.path("shard.tar"), "rb") as f:
            self.assertEqual(f.read(), data)
        st = d.stats()
        self.assertEqual(st["bytes_read_lower"], lower_before, st)
        self.assertGreaterEqual(st["hits"] - hits_before, blocks, st)
        self.assertTrue(d.alive())

    def test_blocks_stay_within_the_budget_and_evicted_ones_leave(self):
        big = et.det_bytes(12 * MiB + 4097, 78)
        et.write_file(os.path.join(self.lower, "big.bin"), big)
        # 4 MiB: whole objects up to 1 MiB, blocks of 256 KiB; 49 blocks, 16 fit.
        d = self.mount(self.lower, opts=["cache.memory=4MiB", "cache.block_size=256KiB",
                                         "cache.policy=lru"])
        for _ in range(2):
            with open(d.path("big.bin"), "rb") as f:
                self.assertEqual(f.read(), big)
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertLessEqual(st["used"], 4 * MiB, st)
        self.assertLessEqual(st["objects"], 16, st)
        self.assertGreaterEqual(st["evictions"], 49 - 16, st)
        self.assertEqual(st["streamed_opens"], 0, st)
        # LRU over a sequential loop larger than the budget: every block is
        # read from LOWER on each pass (the daemon never held more).
        self.assertGreaterEqual(st["bytes_read_lower"], 2 * len(big), st)

    def test_a_file_changed_while_open_fails_with_estale_never_mixed(self):
        d = self.mount(self.lower, opts=["cache.memory=8MiB", "cache.block_size=64KiB",
                                         "cache.consistency=open"])
        fd = os.open(d.path("shard.tar"), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4096, 0), self.data[:4096])
            new = et.det_bytes(len(self.data), 79)
            path = os.path.join(self.lower, "shard.tar")
            with open(path, "r+b") as f:  # in place: the same inode and size
                f.write(new)
            st = os.stat(path)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            # Past what the kernel read ahead: a block this open never had.
            self.assert_errno(errno.ESTALE, os.pread, fd, 4096, 2 * MiB)
        finally:
            os.close(fd)
        with open(d.path("shard.tar"), "rb") as f:  # a new open: the new version
            self.assertEqual(f.read(), new)
        self.assertTrue(d.alive())


class AccessPatternTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.data = {}
        for i, size in enumerate(EDGE_SIZES):
            name = "f%08d" % size
            self.data[name] = et.det_bytes(size, 50 + i)
            et.write_file(os.path.join(self.lower, name), self.data[name])

    def test_eof_and_seek(self):
        d = self.mount(self.lower)
        for name, data in self.data.items():
            with self.subTest(name=name):
                fd = os.open(d.path(name), os.O_RDONLY)
                try:
                    self.assertEqual(os.fstat(fd).st_size, len(data))
                    self.assertEqual(os.lseek(fd, 0, os.SEEK_END), len(data))
                    self.assertEqual(os.read(fd, 100), b"")
                    self.assertEqual(os.pread(fd, 100, len(data) + 12345), b"")
                    tail = max(0, len(data) - 10)
                    self.assertEqual(os.pread(fd, 4096, tail), data[tail:])
                    os.lseek(fd, len(data) // 2, os.SEEK_SET)
                    self.assertEqual(os.read(fd, 3 * MiB), data[len(data) // 2:][:3 * MiB])
                finally:
                    os.close(fd)

    def test_backwards_and_random_reads(self):
        d = self.mount(self.lower)
        rng = random.Random(5)
        name = "f%08d" % (5 * MiB + 123)
        data = self.data[name]
        fd = os.open(d.path(name), os.O_RDONLY)
        try:
            for off in range(len(data) - 4096, -1, -512 * KiB):
                self.assertEqual(os.pread(fd, 4096, off), data[off:off + 4096], off)
            for _ in range(200):
                off = rng.randrange(len(data))
                ln = rng.randint(1, 300000)
                self.assertEqual(os.pread(fd, ln, off), data[off:off + ln], (off, ln))
        finally:
            os.close(fd)

    def test_mmap(self):
        d = self.mount(self.lower)
        for name, data in self.data.items():
            if not data:
                continue
            with self.subTest(name=name):
                with open(d.path(name), "rb") as f:
                    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                        self.assertEqual(m[:], data)
                    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as m:
                        self.assertEqual(m[len(data) // 3:], data[len(data) // 3:])

    def test_many_open_files_interleaved(self):
        d = self.mount(self.lower, opts=["cache.memory=4MiB", "cache.policy=lru"])
        fds = {}
        try:
            for rep in range(10):
                for name in self.data:
                    fds[(rep, name)] = os.open(d.path(name), os.O_RDONLY)
            got = {k: [] for k in fds}
            active = set(fds)
            while active:
                for k in sorted(active):
                    b = os.read(fds[k], 65536 + k[0] * 1000)
                    if b:
                        got[k].append(b)
                    else:
                        active.discard(k)
            for (rep, name), parts in got.items():
                self.assertEqual(b"".join(parts), self.data[name], (rep, name))
        finally:
            for fd in fds.values():
                os.close(fd)
        self.assert_stats_sane(d.stats())


class HitMissAccountingTest(et.MountTestCase):
    """A hit is an open whose object was in RAM, a miss one that loaded it."""

    def test_counts_sequential(self):
        lower = self.make_dir("lower")
        files = {}
        for i in range(20):
            files["s%02d.bin" % i] = et.det_bytes(1000 + i * 9000, 70 + i)
            et.write_file(os.path.join(lower, "s%02d.bin" % i), files["s%02d.bin" % i])
        total = sum(len(v) for v in files.values())
        d = self.mount(lower, opts=["cache.memory=64MiB", "cache.policy=lru"])
        s0 = d.stats()
        self.assertEqual((s0["hits"], s0["misses"], s0["objects"]), (0, 0, 0))
        for name, data in sorted(files.items()):
            self.assertEqual(et.read_file_raw(d.path(name)), data)
        s1 = d.stats()
        self.assert_stats_sane(s1)
        self.assertEqual(s1["misses"], 20, s1)
        self.assertEqual(s1["hits"], 0, s1)
        self.assertEqual(s1["objects"], 20, s1)
        self.assertEqual(s1["tiers"]["ram"]["objects"], 20, s1)
        self.assertGreaterEqual(s1["used"], total, s1)
        self.assertGreaterEqual(s1["bytes_read_lower"], total, s1)
        self.assertEqual(s1["evictions"], 0, s1)
        for rep in range(2):
            for name, data in sorted(files.items()):
                self.assertEqual(et.read_file_raw(d.path(name)), data)
        s2 = d.stats()
        self.assert_stats_sane(s2)
        self.assertEqual(s2["misses"], 20, s2)
        self.assertEqual(s2["hits"], 40, s2)
        self.assertEqual(s2["bytes_read_lower"], s1["bytes_read_lower"], (s1, s2))
        self.assertEqual(s2["used"], s1["used"], (s1, s2))
        self.assertEqual(s2["lower_errors"], 0, s2)
        # stat / listdir do not count as opens.
        for name in files:
            os.stat(d.path(name))
        os.listdir(d.mnt)
        s3 = d.stats()
        self.assertEqual((s3["hits"], s3["misses"]), (s2["hits"], s2["misses"]))


if __name__ == "__main__":
    et.main()
