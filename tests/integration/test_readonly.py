#!/usr/bin/python3
"""The dataset view: read-only (EROFS for every modifying op), listings and
stat fields equal to LOWER, symlinks, hard links, odd names, deep trees and
large directories."""

import errno
import os
import shutil
import stat
import tempfile

import epochfs_test as et

ODD_NAMES = [
    "with space.txt",
    "  leading spaces",
    "trailing space ",
    "ünïcödé-日本語-🙂.bin",
    "quote'dq\"amp&semi;.txt",
    "#hash%percent",
    "-dash",
    "back\\slash",
    "new\nline",
    "tab\there",
    "x" * 255,
    "é" * 127,          # 254 bytes in UTF-8
]

DEEP = 48


def build_tree(root):
    """A LOWER exercising names, links, modes, owners and times."""
    files = {}

    def add(rel, data, mode=0o644, uid=None, gid=None, mtime_ns=None):
        p = os.path.join(root, rel)
        et.write_file(p, data, mode)
        if uid is not None:
            os.chown(p, uid, gid)
        if mtime_ns is not None:
            os.utime(p, ns=(mtime_ns, mtime_ns))
        files[rel] = data

    add("plain.txt", b"plain\n")
    add("empty", b"")
    add("mode600", b"secret", 0o600)
    add("mode755.sh", b"#!/bin/sh\necho hi\n", 0o755)
    add("mode444", b"ro", 0o444)
    add("owned", b"owned by 1234:5678", 0o640, 1234, 5678)
    add("old", b"old file", mtime_ns=1_000_000_000 * 946_684_800 + 123_456_789)
    add("future", b"future file", mtime_ns=1_000_000_000 * 4_102_444_800 + 1)
    for i, n in enumerate(ODD_NAMES):
        add(os.path.join("odd", n), et.det_bytes(100 + i, 7))
    deep = os.path.join(*["d%02d" % i for i in range(DEEP)])
    add(os.path.join(deep, "leaf.bin"), et.det_bytes(3333, 3))
    for i in range(2500):
        add(os.path.join("big", "f%05d.dat" % i), b"%d\n" % i)
    add(os.path.join("sub dir", "inner file"), b"inner")
    os.makedirs(os.path.join(root, "emptydir"))
    os.makedirs(os.path.join(root, "dir700"))
    os.chmod(os.path.join(root, "dir700"), 0o700)
    os.chown(os.path.join(root, "dir700"), 1234, 5678)
    os.utime(os.path.join(root, "emptydir"), ns=(10**18, 10**18 + 5))
    # Symlinks: relative, absolute, to a dir, dangling, chained.
    os.symlink("plain.txt", os.path.join(root, "link-rel"))
    os.symlink("/etc/hostname", os.path.join(root, "link-abs"))
    os.symlink("sub dir", os.path.join(root, "link-dir"))
    os.symlink("does/not/exist", os.path.join(root, "link-dangling"))
    os.symlink("link-rel", os.path.join(root, "link-chain"))
    os.symlink("../plain.txt", os.path.join(root, "odd", "link up ✓"))
    # Hard link: nlink 2 on both names.
    os.link(os.path.join(root, "plain.txt"), os.path.join(root, "hardlink.txt"))
    files["hardlink.txt"] = files["plain.txt"]
    os.utime(root, ns=(10**18, 10**18 + 7))
    return files


def walk(root):
    """{relpath: lstat} for everything under root (not following links)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root)] = os.lstat(p)
    return out


class ReadOnlyViewTest(et.MountTestCase):
    # One LOWER for the whole class (building 2500+ files per test is slow);
    # no test modifies it.
    @classmethod
    def setUpClass(cls):
        cls.class_tmp = tempfile.mkdtemp(prefix="epochfs-it-lower-")
        cls.lower = os.path.join(cls.class_tmp, "lower")
        os.makedirs(cls.lower)
        cls.files = build_tree(cls.lower)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.class_tmp, ignore_errors=True)

    def test_listings_and_stat_match_lower(self):
        for mode in ("auto", "always"):  # fuse.readdirplus
            with self.subTest(readdirplus=mode):
                self.listings_and_stat_match_lower(mode)

    def listings_and_stat_match_lower(self, mode):
        d = self.mount(self.lower, opts=["fuse.readdirplus=" + mode])
        want = walk(self.lower)
        got = walk(d.mnt)
        self.assertIn(".epochfs", got)
        got = {k: v for k, v in got.items()
               if k != ".epochfs" and not k.startswith(".epochfs" + os.sep)}
        self.assertEqual(len(got), len(want), "entry count differs (mount vs LOWER); missing "
                         "e.g. %s" % sorted(set(want) - set(got))[:5])
        self.assertEqual(sorted(got), sorted(want))
        for rel, ls in want.items():
            ms = got[rel]
            with self.subTest(rel=rel):
                self.assertEqual(stat.S_IFMT(ms.st_mode), stat.S_IFMT(ls.st_mode))
                self.assertEqual(stat.S_IMODE(ms.st_mode), stat.S_IMODE(ls.st_mode))
                self.assertEqual(ms.st_uid, ls.st_uid)
                self.assertEqual(ms.st_gid, ls.st_gid)
                self.assertEqual(ms.st_mtime_ns, ls.st_mtime_ns)
                if not stat.S_ISDIR(ls.st_mode):
                    self.assertEqual(ms.st_size, ls.st_size)
                if stat.S_ISREG(ls.st_mode):
                    self.assertEqual(ms.st_nlink, ls.st_nlink)
        self.assertEqual(os.stat(d.mnt).st_mtime_ns, os.stat(self.lower).st_mtime_ns)
        self.assertEqual(got["hardlink.txt"].st_nlink, 2)
        # scandir's cached stat (from a readdirplus reply where the kernel
        # used one) agrees with LOWER too.
        with os.scandir(d.path("big")) as it:
            for e in it:
                ls = os.lstat(os.path.join(self.lower, "big", e.name))
                self.assertEqual(e.stat(follow_symlinks=False).st_size, ls.st_size, e.name)
                self.assertTrue(e.is_file(follow_symlinks=False), e.name)
        self.assertEqual(d.unmount(), 0)

    def test_readdirplus_auto_stats_only_for_readers_that_stat(self):
        # fuse.readdirplus = "auto" (the default): a walk that needs names and
        # types only (find -type f, os.walk, ImageFolder) makes one listing on
        # LOWER and no lstat of any entry; a reader that stats as it reads
        # gets attributes in batches after the first short chunk, not one
        # lookup per entry.
        d = self.mount(self.lower)
        os.stat(d.path("big"))  # the lookup of big/ itself
        before = d.stats()["lower_calls"]
        with os.scandir(d.path("big")) as it:
            kinds = {e.name: e.is_file(follow_symlinks=False) for e in it}
        self.assertEqual(sorted(kinds), sorted(os.listdir(os.path.join(self.lower, "big"))))
        self.assertTrue(all(kinds.values()))
        self.assertEqual(d.stats()["lower_calls"] - before, 1, "LOWER calls of a names-only "
                         "listing of 2500 files (its one listing, no lstat)")
        self.assertEqual(d.unmount(), 0)

        d = self.mount(self.lower)
        os.stat(d.path("big"))
        before = d.stats()["lower_calls"]
        sizes = {}
        with os.scandir(d.path("big")) as it:
            for e in it:
                sizes[e.name] = os.lstat(e.path).st_size
        calls = d.stats()["lower_calls"] - before
        self.assertEqual(len(sizes), 2500)
        for name, size in sizes.items():
            self.assertEqual(size, os.lstat(os.path.join(self.lower, "big", name)).st_size)
        self.assertLess(calls, 250, "LOWER calls of a listing of 2500 files that stats each "
                        "entry as it reads (one per entry: no readdirplus after the first chunk)")
        self.assertEqual(d.unmount(), 0)

    def test_listdir_exact(self):
        d = self.mount(self.lower)
        self.assertEqual(len(os.listdir(d.path("big"))), 2500, "entries listed in big/")
        self.assertEqual(sorted(os.listdir(d.path("big"))), sorted(os.listdir(
            os.path.join(self.lower, "big"))))
        self.assertEqual(len(os.listdir(d.path("big"))), 2500)
        self.assertEqual(sorted(os.listdir(d.path("odd"))),
                         sorted(ODD_NAMES + ["link up ✓"]))
        self.assertEqual(os.listdir(d.path("emptydir")), [])
        # scandir d_type agrees with lstat.
        with os.scandir(d.mnt) as it:
            for e in it:
                if e.name == ".epochfs":
                    continue
                ls = os.lstat(os.path.join(self.lower, e.name))
                self.assertEqual(e.is_symlink(), stat.S_ISLNK(ls.st_mode), e.name)
                self.assertEqual(e.is_dir(follow_symlinks=False), stat.S_ISDIR(ls.st_mode),
                                 e.name)
        # Listing twice (cached / readdirplus paths) gives the same answer.
        self.assertEqual(sorted(os.listdir(d.path("big"))), sorted(os.listdir(d.path("big"))))

    def test_contents_all_files(self):
        d = self.mount(self.lower)
        for rel, data in self.files.items():
            with self.subTest(rel=rel):
                self.assertEqual(et.read_file(d.path(rel)), data)

    def test_symlinks(self):
        d = self.mount(self.lower)
        for rel in ("link-rel", "link-abs", "link-dir", "link-dangling", "link-chain",
                    os.path.join("odd", "link up ✓")):
            with self.subTest(rel=rel):
                self.assertTrue(os.path.islink(d.path(rel)))
                self.assertEqual(os.readlink(d.path(rel)),
                                 os.readlink(os.path.join(self.lower, rel)))
        # Relative links resolve inside the mount.
        self.assertEqual(et.read_file(d.path("link-rel")), b"plain\n")
        self.assertEqual(et.read_file(d.path("link-chain")), b"plain\n")
        self.assertEqual(et.read_file(d.path("odd", "link up ✓")), b"plain\n")
        self.assertEqual(et.read_file(d.path("link-dir", "inner file")), b"inner")
        self.assertEqual(os.listdir(d.path("link-dir")), ["inner file"])
        self.assert_errno(errno.ENOENT, os.stat, d.path("link-dangling"))

    def test_deep_tree(self):
        d = self.mount(self.lower)
        rel = os.path.join(*["d%02d" % i for i in range(DEEP)], "leaf.bin")
        self.assertEqual(et.read_file(d.path(rel)), et.det_bytes(3333, 3))
        # Walk down with relative opens (each level a separate lookup).
        fd = os.open(d.mnt, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for i in range(DEEP):
                nfd = os.open("d%02d" % i, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = nfd
            self.assertEqual(os.listdir(fd), ["leaf.bin"])
        finally:
            os.close(fd)

    def test_missing_names(self):
        d = self.mount(self.lower)
        self.assert_errno(errno.ENOENT, os.stat, d.path("no-such-file"))
        self.assert_errno(errno.ENOENT, os.stat, d.path("odd", "no-such-file"))
        self.assert_errno(errno.ENOTDIR, os.stat, d.path("plain.txt", "x"))
        self.assert_errno(errno.ENOENT, os.stat, d.path(".epochfs", "no-such"))
        self.assert_errno(errno.ENOTDIR, os.listdir, d.path("plain.txt"))
        self.assert_errno(errno.EISDIR, et.read_file, d.path("big"))
        self.assert_errno((errno.ENAMETOOLONG, errno.ENOENT), os.stat, d.path("y" * 256))

    def test_modes_enforced_with_default_permissions(self):
        # As root everything is readable; the kernel still honours exec bits.
        d = self.mount(self.lower, opts=["default_permissions"])
        self.assertTrue(os.access(d.path("mode755.sh"), os.X_OK))
        self.assertFalse(os.access(d.path("plain.txt"), os.X_OK))
        self.assertEqual(et.read_file(d.path("mode600")), b"secret")


class ListingChangesTest(et.MountTestCase):
    def test_an_entry_gone_between_opendir_and_readdir(self):
        # A listing is taken at opendir; its attributes when a readdirplus
        # reply gets to them. An entry removed from LOWER in between is still
        # listed (as LOWER listed it) without attributes, and a stat of it
        # then says it is gone; the others keep theirs. Both modes.
        for mode in ("auto", "always"):
            with self.subTest(readdirplus=mode):
                lower = self.make_dir("lower-" + mode)
                for i in range(300):
                    et.write_file(os.path.join(lower, "d", "f%03d" % i), b"x" * i)
                d = self.mount(lower, opts=["fuse.readdirplus=" + mode])
                it = os.scandir(d.path("d"))  # OPENDIR: LOWER listed now
                os.unlink(os.path.join(lower, "d", "f007"))
                os.unlink(os.path.join(lower, "d", "f250"))
                names = sorted(e.name for e in it)
                it.close()
                self.assertEqual(len(names), 300)
                for gone in ("f007", "f250"):
                    with self.assertRaises(FileNotFoundError):
                        os.stat(d.path("d", gone))
                for i in (0, 6, 8, 249, 251, 299):
                    self.assertEqual(os.stat(d.path("d", "f%03d" % i)).st_size, i)
                    self.assertEqual(et.read_file_raw(d.path("d", "f%03d" % i)), b"x" * i)
                # A later listing is the kernel's cached one or LOWER's anew
                # (the kernel drops its copy when it sees the directory's
                # mtime move): either way the others are all there.
                again = set(os.listdir(d.path("d")))
                self.assertTrue(set(names) - {"f007", "f250"} <= again <= set(names))
                self.assertEqual(d.unmount(), 0)


class PermissionTest(et.MountTestCase):
    """allow_other is off by default; with it, default_permissions applies
    LOWER's modes to other users."""

    NOBODY = 65534

    def setUp(self):
        super().setUp()
        os.chmod(self.tmp, 0o755)
        self.lower = self.make_dir("lower")
        os.chmod(self.lower, 0o755)
        et.write_file(os.path.join(self.lower, "public"), b"for everyone", 0o644)
        et.write_file(os.path.join(self.lower, "private"), b"root only", 0o600)
        et.write_file(os.path.join(self.lower, "mine"), b"nobody's", 0o600)
        os.chown(os.path.join(self.lower, "mine"), self.NOBODY, self.NOBODY)

    def read_as_nobody(self, path):
        return et.as_user(self.NOBODY, self.NOBODY, lambda: et.read_file(path))

    def test_other_users_denied_without_allow_other(self):
        d = self.mount(self.lower)
        mnt = d.mnt
        self.assertEqual(et.as_user(self.NOBODY, self.NOBODY, lambda: os.stat(
            os.path.join(mnt, "public"))), errno.EACCES)
        self.assertEqual(self.read_as_nobody(d.path("public")), errno.EACCES)
        self.assertEqual(et.read_file(d.path("public")), b"for everyone")

    def test_allow_other_with_default_permissions(self):
        d = self.mount(self.lower, opts=["allow_other", "default_permissions"])
        self.assertEqual(self.read_as_nobody(d.path("public")), 0)
        self.assertEqual(self.read_as_nobody(d.path("private")), errno.EACCES)
        self.assertEqual(self.read_as_nobody(d.path("mine")), 0)
        self.assertEqual(et.as_user(self.NOBODY, self.NOBODY, lambda: os.open(
            d.path("mine"), os.O_WRONLY)), errno.EROFS)
        self.assertEqual(et.read_file(d.path("private")), b"root only")
        self.assertEqual(self.read_as_nobody(d.path(".epochfs", "version")), 0)


class ErofsTest(et.MountTestCase):
    """Every modifying operation fails with EROFS and LOWER stays unchanged."""

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        et.write_file(os.path.join(self.lower, "f.txt"), b"original")
        et.write_file(os.path.join(self.lower, "g.txt"), b"other")
        et.write_file(os.path.join(self.lower, "dir", "h.txt"), b"in dir")
        os.makedirs(os.path.join(self.lower, "emptydir"))
        os.symlink("f.txt", os.path.join(self.lower, "ln"))
        self.before = {k: (v.st_mode, v.st_size, v.st_mtime_ns, v.st_uid, v.st_gid)
                       for k, v in walk(self.lower).items()}

    def battery(self, d):
        p = d.path
        E = errno.EROFS
        ops = [
            ("open O_WRONLY", lambda: os.open(p("f.txt"), os.O_WRONLY)),
            ("open O_RDWR", lambda: os.open(p("f.txt"), os.O_RDWR)),
            ("open O_WRONLY|O_APPEND", lambda: os.open(p("f.txt"), os.O_WRONLY | os.O_APPEND)),
            ("open O_WRONLY|O_TRUNC", lambda: os.open(p("f.txt"), os.O_WRONLY | os.O_TRUNC)),
            ("create", lambda: os.open(p("new.txt"), os.O_WRONLY | os.O_CREAT, 0o644)),
            ("create excl", lambda: os.open(p("dir", "new"), os.O_RDWR | os.O_CREAT | os.O_EXCL)),
            ("mkdir", lambda: os.mkdir(p("newdir"))),
            ("mkdir nested", lambda: os.mkdir(p("dir", "newdir"))),
            ("mknod fifo", lambda: os.mkfifo(p("fifo"))),
            ("unlink", lambda: os.unlink(p("f.txt"))),
            ("unlink symlink", lambda: os.unlink(p("ln"))),
            ("rmdir", lambda: os.rmdir(p("emptydir"))),
            ("rename", lambda: os.rename(p("f.txt"), p("f2.txt"))),
            ("rename over", lambda: os.rename(p("f.txt"), p("g.txt"))),
            ("rename dir", lambda: os.rename(p("dir"), p("dir2"))),
            ("truncate", lambda: os.truncate(p("f.txt"), 0)),
            ("truncate grow", lambda: os.truncate(p("f.txt"), 100)),
            ("chmod", lambda: os.chmod(p("f.txt"), 0o777)),
            ("chmod dir", lambda: os.chmod(p("dir"), 0o700)),
            ("chown", lambda: os.chown(p("f.txt"), 1, 1)),
            ("symlink", lambda: os.symlink("f.txt", p("ln2"))),
            ("link", lambda: os.link(p("f.txt"), p("f-hard"))),
            ("setxattr", lambda: os.setxattr(p("f.txt"), "user.test", b"v")),
            ("removexattr", lambda: os.removexattr(p("f.txt"), "user.test")),
            ("utime", lambda: os.utime(p("f.txt"), (1, 1))),
            ("utime now", lambda: os.utime(p("f.txt"))),
        ]
        for name, fn in ops:
            with self.subTest(op=name):
                try:
                    r = fn()
                    if isinstance(r, int):
                        os.close(r)
                    self.fail("%s succeeded, want EROFS" % name)
                except OSError as e:
                    self.assertEqual(e.errno, E, "%s: got %s, want EROFS" % (
                        name, errno.errorcode.get(e.errno, e.errno)))
        # ftruncate / write on a read-only fd: EBADF/EINVAL from the kernel is
        # fine; the point is that nothing changes.
        fd = os.open(p("f.txt"), os.O_RDONLY)
        try:
            self.assert_errno((errno.EBADF, errno.EINVAL, errno.EROFS), os.write, fd, b"x")
            self.assert_errno((errno.EBADF, errno.EINVAL, errno.EROFS), os.ftruncate, fd, 0)
        finally:
            os.close(fd)
        after = {k: (v.st_mode, v.st_size, v.st_mtime_ns, v.st_uid, v.st_gid)
                 for k, v in walk(self.lower).items()}
        self.assertEqual(after, self.before)
        self.assertEqual(et.read_file(os.path.join(self.lower, "f.txt")), b"original")
        self.assertEqual(et.read_file(p("f.txt")), b"original")
        self.assertTrue(d.alive())

    def test_erofs_default(self):
        self.battery(self.mount(self.lower))

    def test_erofs_mount_ro(self):
        self.battery(self.mount(self.lower, opts=["ro"]))

    def test_erofs_rw_option(self):
        # "rw" is accepted and ignored: the dataset view stays read-only.
        self.battery(self.mount(self.lower, opts=["rw"]))

    def test_virtual_files_not_writable(self):
        d = self.mount(self.lower)
        for rel in ("version", "stats"):
            with self.subTest(rel=rel):
                self.assert_errno((errno.EROFS, errno.EACCES, errno.EPERM),
                                  os.open, d.path(".epochfs", rel), os.O_WRONLY)
        self.assert_errno((errno.EROFS, errno.EACCES, errno.EPERM),
                          os.unlink, d.path(".epochfs", "version"))
        self.assert_errno((errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTEMPTY, errno.EBUSY),
                          os.rmdir, d.path(".epochfs"))
        self.assertEqual(d.version(), et.VERSION_TEXT)


if __name__ == "__main__":
    et.main()
