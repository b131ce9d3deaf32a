#!/usr/bin/python3
"""cache.consistency = "open": one version per open, whole (epochfs(8)).

LOWER's files are replaced by write-temp-and-rename while they are open on
the mount. Each case puts the rename at one fixed point between two reads of
one open (by the test itself, or held there by the faultfs fixture), so
each is deterministic; scripts/bench/bench-open-versions is the stress run.
What an open must give: the bytes and the size of the version it opened,
whole; ESTALE only when that version is gone from LOWER while it reads; an
open after the rename the new version, whole. Each case names the cause it
holds:
  - a changed file is a new inode (InodeTable, renumber_changed): the pages
    and the size the kernel keeps of an inode are one version's, so a later
    open of the new version neither fills the old open's pages nor resizes
    it (with OPEN and without);
  - an OPEN of an inode whose version is gone from LOWER is ESTALE, never
    the new version under the old inode;
  - GETATTR of an inode answers its version's size, not LOWER's newer one;
  - a block of a big file is never another version's, even from a load
    another open started that this read joined (CacheFront single flight),
    and a read never takes the failure of a joined load asked for another
    version (it loads for itself);
  - without OPEN, a READ joins a pass only of its inode's generation: an
    inode number the kernel forgot and the daemon gave to the file's next
    version never reads the old version's pass.
"""

import errno
import os
import threading

import epochfs_test as et

KiB = 1024
MiB = 1024 * KiB
WAIT = 30


def read_from(fd, pos):
    """pread(2) from `pos` until a read returns 0 bytes."""
    parts = []
    while True:
        b = os.pread(fd, 256 * KiB, pos)
        if not b:
            return b"".join(parts)
        parts.append(b)
        pos += len(b)


class OpenVersionsTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.p = os.path.join(self.lower, "sample.bin")

    def put(self, data, path=None):
        """Write-temp-and-rename, as a dataset writer replaces a file."""
        path = path or self.p
        tmp = path + ".tmp"
        et.write_file(tmp, data)
        os.rename(tmp, path)

    def assert_version(self, got, want, what):
        self.assertEqual(len(got), len(want), "%s: %d bytes, its version has %d"
                         % (what, len(got), len(want)))
        self.assertTrue(got == want, "%s: bytes of another version" % what)

    def check_old_open_beside_new(self, opts):
        a, b = et.det_bytes(300 * KiB, 1), et.det_bytes(200 * KiB, 2)
        self.put(a)
        d = self.mount(self.lower, opts=["cache.consistency=open", "cache.policy=lru"] + opts)
        fd = os.open(d.path("sample.bin"), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4 * KiB, 0), a[:4 * KiB])
            self.put(b)
            # Opened after the rename: the new version, whole; its reads fill
            # the kernel's pages before the old open reads on.
            self.assert_version(et.read_file_raw(d.path("sample.bin")), b, "the new open")
            try:
                rest = read_from(fd, 4 * KiB)
            except OSError as e:
                # Without OPEN the old version is gone from LOWER: ESTALE,
                # never bytes of the new one.
                self.assertEqual(e.errno, errno.ESTALE)
            else:
                self.assert_version(a[:4 * KiB] + rest, a, "the open of the old version")
            self.assertEqual(os.fstat(fd).st_size, len(a))
        finally:
            os.close(fd)
        self.assert_version(et.read_file_raw(d.path("sample.bin")), b, "an open after")
        self.assertTrue(d.alive(), d.stderr_text())

    # Cause: one inode for every version. The new open's LOOKUP gave the old
    # version's inode the new size, and its reads filled that inode's pages:
    # the old open read the new version's bytes, cut at its size.
    def test_an_open_reads_its_version_while_a_later_open_reads_the_next(self):
        self.check_old_open_beside_new([])

    def test_the_same_with_one_copy(self):
        self.check_old_open_beside_new(["fuse.one_copy=true"])

    def test_the_same_without_open(self):
        self.check_old_open_beside_new(["fuse.no_open=true"])

    # Cause: the OPEN of an inode whose version is gone served the new
    # version under it, with the old version's size (cut or padded) and
    # pages. The open path here takes no LOOKUP (an O_PATH descriptor
    # reopened through /proc), as when a rename lands between an open's
    # LOOKUP and its OPEN.
    def test_the_open_of_an_inode_whose_version_is_gone_is_stale(self):
        a, b = et.det_bytes(200 * KiB, 9), et.det_bytes(300 * KiB, 10)
        self.put(a)
        d = self.mount(self.lower, opts=["cache.consistency=open", "cache.policy=lru"])
        o = os.open(d.path("sample.bin"), os.O_PATH)
        try:
            self.put(b)
            try:
                fd = os.open("/proc/self/fd/%d" % o, os.O_RDONLY)
            except OSError as e:
                self.assertEqual(e.errno, errno.ESTALE)
            else:
                try:
                    got = read_from(fd, 0)
                finally:
                    os.close(fd)
                self.assert_version(got, a, "an open of the inode of the old version")
        finally:
            os.close(o)
        self.assert_version(et.read_file_raw(d.path("sample.bin")), b, "an open by name")

    # Cause: GETATTR answered LOWER's size for an inode of the old version.
    # The kernel took it as the open file's size: reads cut at the new
    # version's size (or padded with zeros past the old one's end).
    def check_size_of_an_open(self, opts):
        a, b = et.det_bytes(100000, 3), et.det_bytes(70000, 4)
        self.put(a)
        d = self.mount(self.lower, opts=["cache.consistency=open", "cache.policy=lru",
                                         "fuse.attr_timeout=0"] + opts)
        fd = os.open(d.path("sample.bin"), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4 * KiB, 0), a[:4 * KiB])
            self.put(b)
            self.assertEqual(os.fstat(fd).st_size, len(a), "fstat of the open file")
            try:
                rest = read_from(fd, 4 * KiB)
            except OSError as e:
                self.assertEqual(e.errno, errno.ESTALE)
            else:
                self.assert_version(a[:4 * KiB] + rest, a, "the open of the old version")
        finally:
            os.close(fd)
        self.assertEqual(os.stat(d.path("sample.bin")).st_size, len(b), "stat of the name")
        self.assert_version(et.read_file_raw(d.path("sample.bin")), b, "an open after")

    def test_the_size_of_an_open_is_its_versions(self):
        self.check_size_of_an_open([])

    def test_the_size_of_an_open_is_its_versions_without_open(self):
        self.check_size_of_an_open(["fuse.no_open=true"])

    # Cause: a read that joined another open's load of the same block took
    # its bytes, of the version that open saw. Held by the fixture: the new
    # version's open loads block 2 and hangs in LOWER's read while the old
    # version's open asks for block 2 too (joins: stats' coalesced).
    def test_a_block_is_never_another_versions(self):
        src = self.make_dir("src")
        path = os.path.join(src, "big_HANG.bin")
        flag = os.path.join(src, ".hang")
        a, b = et.det_bytes(3 * MiB, 5), et.det_bytes(3 * MiB, 6)
        self.put(a, path)
        faultmnt = self.mount_faultfs(src)
        d = self.mount(faultmnt, opts=["cache.consistency=open", "cache.policy=lru",
                                       "cache.memory=8MiB", "cache.block_size=1MiB",
                                       "lower.timeout=60"])
        self.addCleanup(lambda: os.path.exists(flag) and os.unlink(flag))  # runs first
        old = os.open(d.path("big_HANG.bin"), os.O_RDONLY)  # block 0 of a, loaded
        new = None
        try:
            self.put(b, path)
            new = os.open(d.path("big_HANG.bin"), os.O_RDONLY)  # blocks 0 (and 1 ahead) of b
            # Block 2 is read by neither open yet (an open reads block 0 and
            # the one after it ahead).
            self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] == 0, WAIT))
            et.write_file(flag, b"")
            got = {}

            def read_new():
                got["new"] = os.pread(new, 64 * KiB, 2 * MiB)
            t = threading.Thread(target=read_new)
            t.start()
            # The new open's load of block 2 is in LOWER's read, hung.
            self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT),
                            d.stats())
            coalesced = d.stats()["coalesced"]
            err = {}

            def read_old():
                try:
                    got["old"] = os.pread(old, 64 * KiB, 2 * MiB)
                except OSError as e:
                    err["old"] = e.errno
            t2 = threading.Thread(target=read_old)
            t2.start()
            self.assertTrue(et.wait_for(lambda: d.stats()["coalesced"] > coalesced, WAIT),
                            "the old open's read did not join the load: %s" % d.stats())
            os.unlink(flag)
            t.join(WAIT)
            t2.join(WAIT)
            self.assertEqual(got.get("new"), b[2 * MiB:2 * MiB + 64 * KiB])
            if "old" in got:
                self.assertTrue(got["old"] == a[2 * MiB:2 * MiB + 64 * KiB],
                                "block 2 of the old open: bytes of another version")
            else:
                self.assertEqual(err.get("old"), errno.ESTALE)
        finally:
            if os.path.exists(flag):
                os.unlink(flag)
            os.close(old)
            if new is not None:
                os.close(new)
        self.assertTrue(d.alive(), d.stderr_text())

    # Cause: a read that joined a load asked for another version took its
    # failure: an open of the old version loads block 2, LOWER holds the new
    # one, and that load fails Stale; the new version's read of block 2,
    # joined to it, failed ESTALE although its version is LOWER's. Held by
    # the fixture: the old open's load waits in LOWER's open.
    def test_a_read_never_takes_the_failure_of_a_load_for_another_version(self):
        src = self.make_dir("src")
        path = os.path.join(src, "big_HANG.bin")
        flag = os.path.join(src, ".hang_open")
        a, b = et.det_bytes(3 * MiB, 11), et.det_bytes(3 * MiB, 12)
        self.put(a, path)
        faultmnt = self.mount_faultfs(src)
        d = self.mount(faultmnt, opts=["cache.consistency=open", "cache.policy=lru",
                                       "cache.memory=8MiB", "cache.block_size=1MiB",
                                       "lower.timeout=60"])
        self.addCleanup(lambda: os.path.exists(flag) and os.unlink(flag))  # runs first
        old = os.open(d.path("big_HANG.bin"), os.O_RDONLY)  # blocks 0 (and 1 ahead) of a
        new = None
        try:
            self.put(b, path)
            # O_DIRECT: one READ, which the kernel does not send again after
            # an error as it does a page's.
            new = os.open(d.path("big_HANG.bin"), os.O_RDONLY | os.O_DIRECT)
            self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] == 0, WAIT))
            et.write_file(flag, b"")
            got, err = {}, {}

            def read(name, fd):
                try:
                    got[name] = os.pread(fd, 64 * KiB, 2 * MiB)
                except OSError as e:
                    err[name] = e.errno
            t_old = threading.Thread(target=read, args=("old", old))
            t_old.start()
            # The old open's load of block 2 waits in LOWER's open.
            self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT),
                            d.stats())
            coalesced = d.stats()["coalesced"]
            t_new = threading.Thread(target=read, args=("new", new))
            t_new.start()
            self.assertTrue(et.wait_for(lambda: d.stats()["coalesced"] > coalesced, WAIT),
                            "the new open's read did not join the load: %s" % d.stats())
            os.unlink(flag)
            t_old.join(WAIT)
            t_new.join(WAIT)
            self.assertEqual(err.get("new"), None, "the new version's read failed")
            self.assertTrue(got.get("new") == b[2 * MiB:2 * MiB + 64 * KiB],
                            "block 2 of the new open: bytes of another version")
            if "old" in got:
                self.assertTrue(got["old"] == a[2 * MiB:2 * MiB + 64 * KiB])
            else:
                self.assertEqual(err.get("old"), errno.ESTALE)
        finally:
            if os.path.exists(flag):
                os.unlink(flag)
            os.close(old)
            if new is not None:
                os.close(new)
        self.assertTrue(d.alive(), d.stderr_text())

    # Cause: a file's version was its size, mtime and inode number. A copy
    # of the same size renamed over it with its mtime kept (`cp -p`,
    # `touch -r`) is another version by its ctime (set by the rename and by
    # the mtime's change), which LOWER reports. Through a FUSE LOWER whose
    # inode numbers follow its names (the fixture without use_ino), the
    # version looked unchanged: the old bytes were served.
    def check_same_size_and_mtime_replaced(self, through_fixture):
        a, b = et.det_bytes(150 * KiB, 13), et.det_bytes(150 * KiB, 14)
        self.put(a)
        mtime = os.stat(self.p).st_mtime_ns
        lower = self.mount_faultfs(self.lower) if through_fixture else self.lower
        d = self.mount(lower, opts=["cache.consistency=open", "cache.policy=lru"])
        self.assert_version(et.read_file_raw(d.path("sample.bin")), a, "the first open")
        self.assert_version(et.read_file_raw(d.path("sample.bin")), a, "a hot open")
        hits = d.stats()["hits"]
        tmp = self.p + ".tmp"
        et.write_file(tmp, b)
        os.utime(tmp, ns=(mtime, mtime))
        os.rename(tmp, self.p)
        self.assertEqual((os.stat(self.p).st_size, os.stat(self.p).st_mtime_ns), (len(a), mtime))
        self.assert_version(et.read_file_raw(d.path("sample.bin")), b, "an open after")
        self.assertGreater(hits, 0)
        self.assertTrue(d.alive(), d.stderr_text())

    def test_a_replacement_of_the_same_size_and_mtime_is_a_new_version(self):
        self.check_same_size_and_mtime_replaced(False)

    def test_the_same_through_a_fuse_lower_without_inode_numbers(self):
        self.check_same_size_and_mtime_replaced(True)

    # Cause (without OPEN): a pass is the READs of one inode; the kernel
    # forgot the old version's inode, and its number went to the new
    # version's node. A READ of the new inode past offset 0 joined the old
    # version's pass and read its bytes.
    def test_a_reused_inode_number_never_reads_the_old_versions_pass(self):
        a, b = et.det_bytes(300 * KiB, 7), et.det_bytes(300 * KiB, 8)
        self.put(a)
        d = self.mount(self.lower, opts=["cache.consistency=open", "cache.policy=lru",
                                         "fuse.no_open=true", "fuse.one_copy=false"])
        fd = os.open(d.path("sample.bin"), os.O_RDONLY)
        try:
            first = os.fstat(fd).st_ino
            self.assertEqual(os.pread(fd, 4 * KiB, 0), a[:4 * KiB])  # a pass of `a`
        finally:
            os.close(fd)
        self.put(b)
        # The kernel forgets the inodes it holds no reference to (FORGET);
        # a plain listing tells when the daemon has (an entry without a node
        # is listed with inode number 1), and makes no node.
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("2")

        def listed_ino():
            return [e.inode() for e in os.scandir(d.path()) if e.name == "sample.bin"][0]
        self.assertTrue(et.wait_for(lambda: listed_ino() == 1, WAIT), "never forgotten")
        fd = os.open(d.path("sample.bin"), os.O_RDONLY)
        try:
            self.assertEqual(os.fstat(fd).st_ino, first,
                             "the forgotten number was not given to the new version's node")
            self.assert_version(os.pread(fd, 4 * KiB, 64 * KiB) + read_from(fd, 68 * KiB),
                                b[64 * KiB:], "a read of the new version past offset 0")
        finally:
            os.close(fd)
        self.assertTrue(d.alive(), d.stderr_text())


if __name__ == "__main__":
    et.main()
