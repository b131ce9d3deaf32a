"""POSIX behaviour of MOUNTPOINT/.spill/, case by case, in the manner of
pjdfstest (which Debian does not package): each case checks a syscall's
result or errno and the state it leaves, on a real mount. Then fio verify
jobs (random writes, mixed random reads and writes, several jobs at once)
with checksummed blocks: 0 verify errors.

docs/spill.md (POSIX behaviour) lists what passes and what is refused on
purpose, and why.
"""

import ctypes
import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402

MiB = 1 << 20
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


def renameat2(src, dst, flags):
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD = -100
    rc = libc.renameat2(AT_FDCWD, os.fsencode(src), AT_FDCWD, os.fsencode(dst), flags)
    return 0 if rc == 0 else ctypes.get_errno()


class SpillPosixTest(et.MountTestCase):
    OPTS = []  # more mount options (the subclass below)

    def setUp(self):
        super().setUp()
        lower = self.make_dir("lower")
        # On the real disk, not tmpfs: the store uses O_DIRECT.
        ssd = os.path.join(self.tmp, "ssd")
        self.d = self.mount(lower, opts=["spill.path=" + ssd, "spill.staging=16MiB"] + self.OPTS)
        self.sp = self.d.path(".spill")

    def p(self, *names):
        return os.path.join(self.sp, *names)

    def errno_of(self, fn, *args):
        try:
            fn(*args)
        except OSError as e:
            return e.errno
        return 0

    # open / creat
    def test_open_and_create(self):
        a = self.p("a")
        self.assertEqual(self.errno_of(os.open, a, os.O_RDONLY), errno.ENOENT)
        fd = os.open(a, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.close(fd)
        st = os.stat(a)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, "group and other bits dropped")
        self.assertEqual(st.st_size, 0)
        self.assertEqual(st.st_uid, os.getuid())
        self.assertEqual(self.errno_of(os.open, a, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600),
                         errno.EEXIST)
        self.assertEqual(self.errno_of(os.open, self.p("none", "a"), os.O_CREAT | os.O_WRONLY),
                         errno.ENOENT)
        self.assertEqual(self.errno_of(os.open, self.p("a", "b"), os.O_CREAT | os.O_WRONLY),
                         errno.ENOTDIR)
        self.assertEqual(self.errno_of(os.open, self.p("x" * 256), os.O_CREAT | os.O_WRONLY),
                         errno.ENAMETOOLONG)
        os.mkdir(self.p("d"))
        self.assertEqual(self.errno_of(os.open, self.p("d"), os.O_WRONLY), errno.EISDIR)
        self.assertEqual(self.errno_of(os.open, self.p("d"), os.O_CREAT | os.O_WRONLY),
                         errno.EISDIR)
        # O_TRUNC empties; O_APPEND writes at the end whatever the offset.
        et.write_file(a, b"0123456789")
        os.close(os.open(a, os.O_WRONLY | os.O_TRUNC))
        self.assertEqual(os.stat(a).st_size, 0)
        et.write_file(a, b"head")
        fd = os.open(a, os.O_WRONLY | os.O_APPEND)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, b"tail")
        os.close(fd)
        self.assertEqual(et.read_file(a), b"headtail")
        # O_RDONLY|O_TRUNC does not truncate.
        os.close(os.open(a, os.O_RDONLY | os.O_TRUNC))
        self.assertEqual(et.read_file(a), b"headtail")

    # read / write / pread / pwrite / holes / truncate
    def test_io_holes_and_truncate(self):
        a = self.p("f")
        fd = os.open(a, os.O_CREAT | os.O_RDWR, 0o600)
        self.assertEqual(os.pwrite(fd, b"end", 5 * MiB + 17), 3)
        self.assertEqual(os.fstat(fd).st_size, 5 * MiB + 20)
        self.assertEqual(os.pread(fd, 100, 1 * MiB), bytes(100), "a hole reads as zeros")
        self.assertEqual(os.pread(fd, 10, 5 * MiB + 15), b"\0\0end")
        self.assertEqual(os.pread(fd, 10, 6 * MiB), b"", "past the end: nothing")
        os.ftruncate(fd, 1000)
        self.assertEqual(os.fstat(fd).st_size, 1000)
        os.ftruncate(fd, 5 * MiB + 20)
        self.assertEqual(os.pread(fd, 20, 5 * MiB), bytes(20), "shrunk bytes never reappear")
        os.truncate(a, 7)
        self.assertEqual(os.stat(a).st_size, 7)
        os.fsync(fd)
        os.fdatasync(fd)
        os.close(fd)
        self.assertEqual(self.errno_of(os.truncate, self.sp, 0), errno.EISDIR)

    # mkdir / rmdir / unlink
    def test_directories(self):
        d = self.p("d")
        os.mkdir(d, 0o755)
        st = os.stat(d)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        self.assertEqual(self.errno_of(os.mkdir, d), errno.EEXIST)
        self.assertEqual(self.errno_of(os.mkdir, self.p("no", "d")), errno.ENOENT)
        et.write_file(self.p("d", "f"), b"x")
        self.assertEqual(self.errno_of(os.rmdir, d), errno.ENOTEMPTY)
        self.assertEqual(self.errno_of(os.rmdir, self.p("d", "f")), errno.ENOTDIR)
        self.assertEqual(self.errno_of(os.unlink, d), errno.EISDIR)
        self.assertEqual(self.errno_of(os.unlink, self.p("d", "none")), errno.ENOENT)
        self.assertEqual(self.errno_of(os.rmdir, self.p("none")), errno.ENOENT)
        os.unlink(self.p("d", "f"))
        os.rmdir(d)
        self.assertFalse(os.path.exists(d))
        # The area itself is part of the read-only mount root.
        self.assertIn(self.errno_of(os.rmdir, self.sp), (errno.EROFS, errno.EBUSY))

    def test_listing_of_many_entries(self):
        os.mkdir(self.p("many"))
        names = ["f%04d" % i for i in range(1500)]
        for n in names:
            os.close(os.open(self.p("many", n), os.O_CREAT | os.O_WRONLY, 0o600))
        self.assertEqual(sorted(os.listdir(self.p("many"))), names)
        # Removing entries while listing: each remaining name once.
        with os.scandir(self.p("many")) as it:
            seen = []
            for i, e in enumerate(it):
                seen.append(e.name)
                if i == 10:
                    for n in names[:500]:
                        os.unlink(self.p("many", n))
        self.assertEqual(len(seen), len(set(seen)))
        self.assertEqual(sorted(os.listdir(self.p("many"))), names[500:])

    # rename
    def test_rename(self):
        a, b = self.p("a"), self.p("b")
        et.write_file(a, b"A")
        et.write_file(b, b"B")
        os.rename(a, b)  # replaces
        self.assertFalse(os.path.exists(a))
        self.assertEqual(et.read_file(b), b"A")
        os.rename(b, b)  # to itself: nothing
        self.assertEqual(et.read_file(b), b"A")
        os.mkdir(self.p("d"))
        os.mkdir(self.p("e"))
        et.write_file(self.p("e", "x"), b"x")
        self.assertEqual(self.errno_of(os.rename, b, self.p("d")), errno.EISDIR)
        self.assertEqual(self.errno_of(os.rename, self.p("d"), b), errno.ENOTDIR)
        self.assertEqual(self.errno_of(os.rename, self.p("d"), self.p("e")), errno.ENOTEMPTY)
        self.assertEqual(self.errno_of(os.rename, self.p("e"), self.p("e", "sub")), errno.EINVAL)
        self.assertEqual(self.errno_of(os.rename, self.p("none"), self.p("z")), errno.ENOENT)
        et.write_file(a, b"A2")
        self.assertEqual(renameat2(a, b, RENAME_NOREPLACE), errno.EEXIST)
        self.assertEqual(et.read_file(b), b"A")
        self.assertEqual(renameat2(a, self.p("c"), RENAME_NOREPLACE), 0)
        self.assertEqual(et.read_file(self.p("c")), b"A2")
        self.assertEqual(renameat2(b, self.p("c"), RENAME_EXCHANGE), errno.EINVAL)
        os.rename(self.p("d"), self.p("e", "d"))  # into another directory
        self.assertTrue(os.path.isdir(self.p("e", "d")))
        # An open file renamed keeps its bytes and takes more.
        fd = os.open(self.p("c"), os.O_WRONLY | os.O_APPEND)
        os.rename(self.p("c"), self.p("e", "c"))
        os.write(fd, b"+")
        os.close(fd)
        self.assertEqual(et.read_file(self.p("e", "c")), b"A2+")

    def test_unlink_of_an_open_file(self):
        a = self.p("a")
        et.write_file(a, b"0123")
        fd = os.open(a, os.O_RDWR)
        os.unlink(a)
        self.assertFalse(os.path.exists(a))
        self.assertEqual(self.errno_of(os.stat, a), errno.ENOENT)
        # The open descriptor still reads and writes the unlinked file.
        self.assertEqual(os.pread(fd, 4, 0), b"0123")
        os.pwrite(fd, b"X", 4)
        self.assertEqual(os.pread(fd, 8, 0), b"0123X")
        # The name can be taken again at once, by a different file.
        et.write_file(a, b"new")
        self.assertEqual(et.read_file(a), b"new")
        self.assertEqual(os.pread(fd, 8, 0), b"0123X")
        os.close(fd)
        self.assertEqual(et.read_file(a), b"new")

    # attributes
    def test_chmod_chown_and_times(self):
        a = self.p("a")
        et.write_file(a, b"x")
        os.chmod(a, 0o640)
        self.assertEqual(stat.S_IMODE(os.stat(a).st_mode), 0o600, "owner bits only")
        os.chmod(a, 0o400)
        self.assertEqual(stat.S_IMODE(os.stat(a).st_mode), 0o400)
        os.chown(a, 1234, 1234)  # root may
        st = os.stat(a)
        self.assertEqual((st.st_uid, st.st_gid), (1234, 1234))
        self.assertEqual(self.errno_of(os.chmod, self.sp, 0o700), errno.EPERM)
        before = os.stat(a).st_mtime
        os.utime(a, (1, 1))  # accepted, not kept (the SSD file's times are shown)
        self.assertNotEqual(os.stat(a).st_mtime, 1)
        self.assertGreaterEqual(os.stat(a).st_mtime, before - 1)
        st = os.statvfs(self.sp)
        self.assertGreater(st.f_bsize, 0)

    # what is refused on purpose
    def test_refused_on_purpose(self):
        a = self.p("a")
        et.write_file(a, b"x")
        self.assertEqual(self.errno_of(os.link, a, self.p("h")), errno.EPERM)
        self.assertEqual(self.errno_of(os.symlink, "a", self.p("s")), errno.EPERM)
        self.assertEqual(self.errno_of(os.mkfifo, self.p("fifo")), errno.EPERM)
        self.assertEqual(self.errno_of(os.mknod, self.p("n"), 0o600 | stat.S_IFCHR, os.makedev(1, 3)),
                         errno.EPERM)
        self.assertIn(self.errno_of(os.setxattr, a, "user.k", b"v"),
                      (errno.ENOTSUP, errno.EOPNOTSUPP))
        self.assertIn(self.errno_of(os.getxattr, a, "user.k"),
                      (errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENODATA))
        self.assertFalse(os.path.exists(self.p("h")))
        self.assertEqual(sorted(os.listdir(self.sp)), ["a"])
        self.assertTrue(self.d.alive())


@unittest.skipUnless(shutil.which("fio"), "fio is not installed")
class SpillPosixNoOpenTest(SpillPosixTest):
    """The same cases with fuse.no_open: `.spill` is a FUSE session of its
    own, mounted on the dataset session's (empty) `.spill` directory."""
    OPTS = ["fuse.no_open=true"]

    def test_the_spill_area_is_a_session_of_its_own(self):
        self.assertNotEqual(os.stat(self.d.mnt).st_dev, os.stat(self.sp).st_dev)
        self.assertEqual(len(et.mount_entries(self.sp)), 1)
        with open(self.p("w"), "wb") as f:
            f.write(b"x" * 5000)
        self.assertEqual(sorted(os.listdir(self.d.mnt)), [".epochfs", ".spill"])
        self.assertEqual(os.listdir(self.sp), ["w"])
        st = self.d.stats()
        self.assertEqual(st["tiers"]["spill"]["logical_bytes"], 5000, st["tiers"]["spill"])


class SpillFioVerifyTest(et.MountTestCase):
    """fio writes checksummed blocks and reads them back: random writes of
    mixed sizes, mixed random reads and writes, and several jobs at once,
    through the mount (buffered: the spill files are direct_io at the FUSE
    level, so every request reaches the store)."""

    def test_fio_verify_jobs(self):
        lower = self.make_dir("lower")
        ssd = os.path.join(self.tmp, "ssd")
        d = self.mount(lower, opts=["spill.path=" + ssd, "spill.staging=8MiB"])
        sp = d.path(".spill")
        common = ["--ioengine=psync", "--verify=crc32c", "--verify_fatal=1", "--do_verify=1",
                  "--output-format=json", "--directory=" + sp, "--randseed=42"]
        jobs = [
            ["--name=randwrite", "--rw=randwrite", "--bsrange=4k-256k", "--size=24M"],
            ["--name=randrw", "--rw=randrw", "--rwmixread=40", "--bs=64k", "--size=16M",
             "--verify_backlog=16"],
            ["--name=many", "--rw=randwrite", "--bs=16k", "--size=8M", "--numjobs=4"],
        ]
        for job in jobs:
            # cwd: fio leaves its verify state files (*-verify.state) there.
            r = subprocess.run(["fio"] + common + job, capture_output=True, text=True,
                               timeout=300 * et.TIME_SCALE, cwd=self.tmp)
            self.assertEqual(r.returncode, 0, "%s\n%s\n%s" % (job, r.stdout[-3000:], r.stderr[-3000:]))
            out = json.loads(r.stdout[r.stdout.index("{"):])
            for j in out["jobs"]:
                self.assertEqual(j["error"], 0, j["jobname"])
                self.assertGreater(j["write"]["io_bytes"], 0, j["jobname"])
                # The verify pass read back what was written.
                self.assertGreater(j["read"]["io_bytes"], 0, j["jobname"])
            self.assertNotIn("verify", r.stderr.lower(), r.stderr[-2000:])
        tier = d.stats()["tiers"]["spill"]
        self.assertEqual(tier.get("checksum_errors", 0), 0)
        self.assertTrue(d.alive())


if __name__ == "__main__":
    et.main()
