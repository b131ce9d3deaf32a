#!/usr/bin/python3
"""Mount lifecycle: startup, .epochfs/ virtual files, option and config
handling, mount errors, unmount by signal / fusermount3 / auto_unmount,
daemon mode, `mount -t fuse.epochfs` and fstab."""

import ctypes
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import time

import epochfs_test as et

MiB = 1024 * 1024


NOBODY = 65534


def all_mounts():
    with open("/proc/self/mounts") as f:
        return sorted(f.read().splitlines())


def find_daemon_pids(mnt, cwd=None):
    """PIDs of epochfs processes whose command line names mnt (relative
    arguments taken from cwd, when given)."""
    pids = []
    real = os.path.realpath(os.path.join(cwd or "", mnt))
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if not argv or "epochfs" not in os.path.basename(argv[0]):
            continue
        if any(os.path.realpath(os.path.join(cwd, a) if cwd else a) == real
               for a in argv[1:] if a.startswith("/") or cwd):
            pids.append(int(d))
    return pids


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except OSError:
        return False


class LowerMixin:
    def make_lower(self):
        lower = self.make_dir("lower")
        et.write_file(os.path.join(lower, "a.bin"), et.det_bytes(5000, 1))
        et.write_file(os.path.join(lower, "sub", "b.txt"), b"hello epochfs\n")
        return lower

    def check_lower_visible(self, mnt):
        self.assertEqual(et.read_file(os.path.join(mnt, "a.bin")), et.det_bytes(5000, 1))
        self.assertEqual(et.read_file(os.path.join(mnt, "sub", "b.txt")), b"hello epochfs\n")


class VirtualFilesTest(LowerMixin, et.MountTestCase):
    def test_version_exact(self):
        d = self.mount(self.make_lower())
        self.assertEqual(d.version(), "epochfs 0.1.0\nprotocol 1\n")
        self.assertTrue(os.path.isfile(d.path(".epochfs", "version")))
        self.assertEqual(et.read_file_raw(d.path(".epochfs", "version"), 3),
                         b"epochfs 0.1.0\nprotocol 1\n")

    def test_epochfs_dir_listed(self):
        d = self.mount(self.make_lower())
        names = sorted(os.listdir(d.mnt))
        self.assertEqual(names, sorted([".epochfs", "a.bin", "sub"]))
        self.assertTrue(os.path.isdir(d.path(".epochfs")))
        inner = os.listdir(d.path(".epochfs"))
        self.assertIn("version", inner)
        self.assertIn("stats", inner)
        # .epochfs exists only at the root, not inside subdirectories.
        self.assertNotIn(".epochfs", os.listdir(d.path("sub")))
        self.assertFalse(os.path.exists(d.path("sub", ".epochfs")))

    def test_stats_fresh(self):
        d = self.mount(self.make_lower(), opts=["cache.memory=64MiB", "cache.policy=lru"])
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertEqual(st["budget"], 64 * MiB)
        self.assertEqual(st["policy"], "lru")
        for k in ("used", "hits", "misses", "bytes_read_lower", "objects", "evictions",
                  "lower_errors"):
            self.assertEqual(st[k], 0, "fresh mount: %s=%r" % (k, st[k]))
        self.assertEqual(st["tiers"]["ram"]["objects"], 0)
        self.assertEqual(st["tiers"]["ram"]["bytes"], 0)

    def test_stats_is_fresh_on_every_open(self):
        d = self.mount(self.make_lower(), opts=["cache.memory=64MiB", "cache.policy=lru"])
        s0 = d.stats()
        et.read_file(d.path("a.bin"))
        s1 = d.stats()
        self.assert_stats_sane(s1)
        self.assertEqual(s1["misses"], s0["misses"] + 1, (s0, s1))
        self.assertGreaterEqual(s1["bytes_read_lower"], 5000)
        # Reading the stats file itself must not count as a hit or miss.
        for _ in range(3):
            d.stats()
        s2 = d.stats()
        self.assertEqual((s2["hits"], s2["misses"]), (s1["hits"], s1["misses"]))

    def test_stats_valid_json_with_small_reads(self):
        d = self.mount(self.make_lower())
        fd = os.open(d.path(".epochfs", "stats"), os.O_RDONLY)
        try:
            chunks = []
            while True:
                b = os.read(fd, 7)
                if not b:
                    break
                chunks.append(b)
        finally:
            os.close(fd)
        self.assert_stats_sane(json.loads(b"".join(chunks)))


class OptionsTest(LowerMixin, et.MountTestCase):
    def test_config_file_and_override(self):
        lower = self.make_lower()
        conf = os.path.join(self.tmp, "epochfs.toml")
        with open(conf, "w") as f:
            f.write('# test config\n[cache]\nmemory = "8MiB"\npolicy = "lru"\n')
        d = self.mount(lower, extra=["--config", conf])
        st = d.stats()
        self.assertEqual(st["budget"], 8 * MiB)
        self.assertEqual(st["policy"], "lru")
        self.assertEqual(d.unmount(), 0)
        # -o overrides the file.
        d = self.mount(lower, mnt=d.mnt, opts=["cache.memory=16MiB"], extra=["--config", conf])
        self.assertEqual(d.stats()["budget"], 16 * MiB)
        self.check_lower_visible(d.mnt)
        self.assertEqual(d.unmount(), 0)
        # -o config=FILE, as fstab says it: the same file, overridden by the
        # other -o keys wherever they stand.
        d = self.mount(lower, mnt=d.mnt, opts=["cache.memory=12MiB,config=" + conf])
        st = d.stats()
        self.assertEqual((st["budget"], st["policy"]), (12 * MiB, "lru"))
        self.assertEqual(d.unmount(), 0)
        r = subprocess.run([et.epochfs_bin(), lower, d.mnt, "-f", "-o", "config=" + conf,
                            "--config", conf + ".other"], capture_output=True, text=True,
                           timeout=et.EXIT_TIMEOUT)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("two config files", r.stderr)

    def test_a_budget_larger_than_memory_is_said(self):
        d = self.mount(self.make_lower(), opts=["cache.memory=64TiB"])
        warnings = d.stats()["warnings"]
        self.assertTrue(any("is more than the" in w and "cache.memory" in w for w in warnings),
                        warnings)
        self.assertIn("is more than the", d.stderr_text())
        self.check_lower_visible(d.mnt)
        d2 = self.mount(self.make_lower(), opts=["cache.memory=8MiB"])
        self.assertEqual(d2.stats()["warnings"], [])

    def test_memory_units(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        for value, want in (("1MiB", MiB), ("3145728", 3 * MiB), ("1GiB", 1024 * MiB)):
            d = self.mount(lower, mnt=mnt, opts=["cache.memory=" + value])
            self.assertEqual(d.stats()["budget"], want, value)
            self.assertEqual(d.unmount(), 0)

    def test_config_keys_accepted(self):
        d = self.mount(self.make_lower(), opts=[
            "cache.memory=64MiB", "cache.policy=lru", "cache.consistency=open",
            "fuse.threads=4", "fuse.entry_timeout=1", "log.level=debug"])
        self.check_lower_visible(d.mnt)
        d = self.mount(d.lower, opts=["cache.consistency=immutable", "log.level=info"])
        self.check_lower_visible(d.mnt)

    def test_fuse_options(self):
        lower = self.make_lower()
        d = self.mount(lower, opts=["ro", "allow_other", "default_permissions",
                                    "fsname=epochfs-it-src", "auto_unmount"])
        self.check_lower_visible(d.mnt)
        ents = et.mount_entries(d.mnt)
        self.assertEqual(len(ents), 1, ents)
        source, _, fstype, mopts = ents[0]
        self.assertEqual(source, "epochfs-it-src")
        self.assertTrue(fstype.startswith("fuse"), fstype)
        self.assertIn("allow_other", mopts.split(","))
        self.assertIn("default_permissions", mopts.split(","))

    def test_readahead_raised_whatever_the_mountpoint_name_or_subtype(self):
        # The daemon raises the mount's readahead window (1024 KiB) at the
        # first READ, finding its sysfs file through /proc/self/mountinfo:
        # a space in the path is "\\040" there, and -o subtype=X makes the
        # type fuse.X. (Before, both silently kept the kernel's 128 KiB.)
        lower = self.make_lower()
        for name, opts in (("with space", None), ("plain", ["subtype=epochfs-x"])):
            with self.subTest(name=name):
                d = self.mount(lower, mnt=self.make_mountpoint(name), opts=opts)
                self.check_lower_visible(d.mnt)  # a READ
                st = os.stat(d.mnt)
                ra = "/sys/class/bdi/%d:%d/read_ahead_kb" % (os.major(st.st_dev),
                                                             os.minor(st.st_dev))
                with open(ra) as f:
                    self.assertEqual(f.read().strip(), "1024", (name, ra))
                self.assertEqual(d.unmount(), 0)

    def test_generic_mount_options_ignored(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        for opts in (["rw", "dev", "suid", "exec", "atime"],
                     ["nodev", "nosuid", "noexec", "noatime"]):
            d = self.mount(lower, mnt=mnt, opts=opts)
            self.check_lower_visible(d.mnt)
            self.assertEqual(d.unmount(), 0, opts)

    def test_debug_flag(self):
        d = self.mount(self.make_lower(), extra=["-d"])
        self.check_lower_visible(d.mnt)
        self.assertEqual(d.unmount(), 0)

    def test_log_lines_have_times_and_job_events(self):
        # log.level=debug: each line starts "epochfs: DATE TIME.ms LEVEL: ";
        # a job's registration, a refused control write and the job's
        # removal are each logged with who did it and why; reads name files.
        import re
        d = self.mount(self.make_lower(), opts=["log.level=debug"])
        job = d.path(".epochfs", "jobs", "logged")
        for _ in range(2):
            self.assertEqual(et.read_file_raw(d.path("sub", "b.txt")), b"hello epochfs\n")
        os.mkdir(job)
        try:
            with open(os.path.join(job, "config"), "w") as f:
                f.write("batch_size = 0\n")
        except OSError as e:
            self.assertEqual(e.errno, errno.EINVAL)
        else:
            self.fail("a config with batch_size = 0 was accepted")
        os.rmdir(job)
        self.assertEqual(d.unmount(), 0)
        lines = d.stderr_text().splitlines()
        stamp = re.compile(r"^epochfs: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} "
                           r"(debug|info|warning|error): ")
        logged = [l for l in lines if l.startswith("epochfs: ")]
        self.assertTrue(logged, lines)
        for l in logged:
            self.assertRegex(l, stamp)
        text = "\n".join(logged)
        self.assertRegex(text, r'info: job "logged" \(mkdir by uid 0, pid \d+\): registered')
        self.assertRegex(text, r'info: write of "jobs/logged/config" \(15 bytes\) by uid 0 '
                               r'refused: .*batch_size')
        # At debug, every read names its file: a miss, then a hit.
        self.assertRegex(text, r"debug: miss sub/b\.txt: 14 bytes from lower in \d+ us")
        self.assertRegex(text, r"debug: hit sub/b\.txt\n")
        self.assertRegex(text, r'info: job "logged" \(rmdir by uid 0\): ended, its cache released')


def default_config_path():
    """The file the daemon reads when no config is named, as --help says it."""
    r = subprocess.run([et.epochfs_bin(), "--help"], capture_output=True, text=True, timeout=30)
    found = re.findall(r"^Config: --config FILE, else (\S+) when it exists$", r.stdout, re.M)
    assert len(found) == 1, r.stdout
    return found[0]


class DefaultConfigTest(LowerMixin, et.MountTestCase):
    """SYSCONFDIR/epochfs/epochfs.toml is read when no config is named;
    --no-config and --config opt out of it. The machine's own SYSCONFDIR is
    never touched: each run is in a mount namespace of its own (unshare -m)
    in which a temporary directory is bound over SYSCONFDIR."""

    def setUp(self):
        super().setUp()
        self.default = default_config_path()
        self.assertTrue(self.default.startswith("/"), self.default)
        self.assertTrue(self.default.endswith("/epochfs/epochfs.toml"), self.default)
        self.sysconfdir = os.path.dirname(os.path.dirname(self.default))
        if not os.path.isdir(self.sysconfdir):
            self.skipTest("SYSCONFDIR %s is not a directory to bind over" % self.sysconfdir)
        self.etc = self.make_dir("etc")
        os.makedirs(os.path.join(self.etc, "epochfs"))

    def run_in_namespace(self, args, default_text):
        """Mounts LOWER with `epochfs ARGS LOWER MNT` (in the background) where
        SYSCONFDIR/epochfs/epochfs.toml holds default_text (None: no file);
        returns (returncode, the mount's stats or None, stderr)."""
        if default_text is not None:
            with open(os.path.join(self.etc, "epochfs", "epochfs.toml"), "w") as f:
                f.write(default_text)
        lower, mnt = self.make_lower(), self.make_mountpoint()
        out = os.path.join(self.tmp, "stats.json")
        if os.path.exists(out):
            os.unlink(out)
        script = """
set -u
mount --bind "$1" "$2" || exit 90
bin=$3; lower=$4; mnt=$5; out=$6; shift 6
trap 'fusermount3 -u "$mnt" 2>/dev/null' EXIT
"$bin" "$@" "$lower" "$mnt" || exit $?
cat "$mnt/.epochfs/stats" > "$out"
"""
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
                            self.etc, self.sysconfdir, et.epochfs_bin(), lower, mnt, out]
                           + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=60 * et.TIME_SCALE)
        err = p.stderr
        self.assertNotEqual(p.returncode, 90, err)
        self.assertFalse(et.is_mounted(mnt), "the mount was outside the namespace")
        if not os.path.exists(out):
            return p.returncode, None, err
        with open(out) as f:
            return p.returncode, json.load(f), err

    def test_the_default_file_is_read_when_it_exists(self):
        rc, st, err = self.run_in_namespace([], 'cache.memory = "20MiB"\ncache.policy = "lru"\n')
        self.assertEqual(rc, 0, err)
        self.assertEqual((st["budget"], st["policy"]), (20 * MiB, "lru"))
        # -o overrides it, key by key.
        rc, st, err = self.run_in_namespace(["-o", "cache.memory=24MiB"], None)
        self.assertEqual(rc, 0, err)
        self.assertEqual((st["budget"], st["policy"]), (24 * MiB, "lru"))

    def test_no_config_and_a_named_file_opt_out(self):
        other = os.path.join(self.tmp, "other.toml")
        with open(other, "w") as f:
            f.write('cache.memory = "28MiB"\n')
        rc, st, err = self.run_in_namespace(["--no-config", "-o", "cache.memory=24MiB"],
                                            'cache.memory = "20MiB"\ncache.policy = "lru"\n')
        self.assertEqual(rc, 0, err)
        self.assertEqual((st["budget"], st["policy"]), (24 * MiB, "future"))
        for args in (["--config", other], ["-o", "config=" + other]):
            rc, st, err = self.run_in_namespace(args, None)
            self.assertEqual(rc, 0, err)
            self.assertEqual((st["budget"], st["policy"]), (28 * MiB, "future"), args)
        rc, st, err = self.run_in_namespace(["--no-config", "--config", other], None)
        self.assertNotEqual(rc, 0)
        self.assertIsNone(st)
        self.assertEqual(err, "epochfs: --no-config and a config file (%s): choose one\n" % other)

    def test_a_bad_default_file_is_named_and_mounts_nothing(self):
        rc, st, err = self.run_in_namespace([], 'cache.memroy = "20MiB"\n')
        self.assertNotEqual(rc, 0)
        self.assertIsNone(st)
        self.assertIn(self.default, err)
        self.assertIn("cache.memroy", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_without_the_file_the_defaults_hold(self):
        rc, st, err = self.run_in_namespace(["-o", "cache.memory=24MiB"], None)
        self.assertEqual(rc, 0, err)
        self.assertEqual((st["budget"], st["policy"]), (24 * MiB, "future"))


class ForeignOptionsTest(LowerMixin, et.MountTestCase):
    """Options from JuiceFS, rclone and mountpoint-s3 fail with one line
    that says what epochfs takes instead, and mount nothing."""

    def test_look_alikes_get_a_one_line_hint(self):
        lower, mnt = self.make_lower(), self.make_mountpoint()
        for args, want in (
                (["--cache-size", "1G"], "epochfs: unknown option --cache-size (JuiceFS): "
                                         "use -o cache.memory=1GiB\n"),
                (["--vfs-cache-max-size=10G"], "epochfs: unknown option --vfs-cache-max-size "
                                               "(rclone): use -o cache.memory=10GiB\n"),
                (["--allow-other"], "epochfs: unknown option --allow-other (rclone, "
                                    "mountpoint-s3): use -o allow_other\n"),
                (["-o", "cache-size=102400"], "epochfs: unknown option 'cache-size=102400' "
                                              "(JuiceFS): use -o cache.memory=100GiB\n")):
            r = subprocess.run([et.epochfs_bin(), "-f", "--no-config"] + args + [lower, mnt],
                               capture_output=True, text=True, timeout=et.EXIT_TIMEOUT,
                               stdin=subprocess.DEVNULL)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertEqual(r.stderr, want, args)
            self.assertFalse(et.is_mounted(mnt))


class MountErrorsTest(LowerMixin, et.MountTestCase):
    def run_failing(self, lower, mnt, opts=None, extra=None, foreground=True):
        cmd = self.epochfs_cmd(lower, mnt, opts, extra, foreground)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=20 * et.TIME_SCALE,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.fail("%s: did not exit (should have failed)" % cmd)
        self.assertEqual(r.returncode, 1, "%s: exit %d, stderr %r" % (cmd, r.returncode, r.stderr))
        lines = r.stderr.strip("\n").split("\n")
        self.assertEqual(len(lines), 1, "%s: want one stderr line, got %r" % (cmd, r.stderr))
        self.assertTrue(lines[0].startswith("epochfs: "), "%s: %r" % (cmd, lines[0]))
        if os.path.isdir(mnt):
            self.assertFalse(et.is_mounted(mnt), "%s: left a mount" % cmd)
        return lines[0]

    def test_missing_lower(self):
        mnt = self.make_mountpoint()
        missing = os.path.join(self.tmp, "no-such-lower")
        self.run_failing(missing, mnt)
        self.run_failing(missing, mnt, foreground=False)

    def test_lower_not_a_directory(self):
        f = os.path.join(self.tmp, "plainfile")
        et.write_file(f, b"x")
        self.run_failing(f, self.make_mountpoint())

    def test_missing_mountpoint(self):
        lower = self.make_lower()
        self.run_failing(lower, os.path.join(self.tmp, "no-such-mnt"))
        self.run_failing(lower, os.path.join(self.tmp, "no-such-mnt"), foreground=False)

    def test_mountpoint_not_a_directory(self):
        f = os.path.join(self.tmp, "mnt-file")
        et.write_file(f, b"x")
        self.run_failing(self.make_lower(), f)
        self.assertFalse(et.is_mounted(f))

    def test_unknown_config_key(self):
        line = self.run_failing(self.make_lower(), self.make_mountpoint(),
                                opts=["cache.no_such_key=1"])
        self.assertIn("cache.no_such_key", line)
        self.run_failing(self.make_lower(), self.make_mountpoint(),
                         opts=["nosection=1"])

    def test_bad_values(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        for opt in ("cache.memory=banana", "cache.memory=-5", "cache.memory=12XB",
                    "cache.policy=fifo-ish", "cache.consistency=sometimes",
                    "fuse.threads=many", "log.level=loud"):
            line = self.run_failing(lower, mnt, opts=[opt])
            self.assertIn(opt.split("=")[0], line, opt)
        self.run_failing(lower, mnt, opts=["cache.memory=banana"], foreground=False)

    def test_bad_mount_option(self):
        self.run_failing(self.make_lower(), self.make_mountpoint(),
                         opts=["no_such_mount_option"])

    def test_bad_config_file(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        conf = os.path.join(self.tmp, "bad.toml")
        with open(conf, "w") as f:
            f.write('[cache]\nmemory = "8MiB"\nbogus_key = 3\n')
        line = self.run_failing(lower, mnt, extra=["--config", conf])
        self.assertIn("bogus_key", line)
        self.assertRegex(line, r"(:3\b|line 3\b)", "error should name the file line")
        with open(conf, "w") as f:
            f.write('[cache\nmemory = \n')
        self.run_failing(lower, mnt, extra=["--config", conf])
        self.run_failing(lower, mnt, extra=["--config", os.path.join(self.tmp, "nope.toml")])

    def test_mountpoint_still_usable_after_errors(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.run_failing(lower, mnt, opts=["cache.memory=banana"])
        d = self.mount(lower, mnt=mnt)
        self.check_lower_visible(d.mnt)


class UnmountTest(LowerMixin, et.MountTestCase):
    def assert_clean(self, mnt):
        self.assertFalse(et.is_mounted(mnt), "still mounted: %s" % mnt)
        os.stat(mnt)  # no ENOTCONN
        self.assertEqual(os.listdir(mnt), [])

    def test_sigterm(self):
        d = self.mount(self.make_lower())
        self.check_lower_visible(d.mnt)
        d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait_exit(), 0, d.stderr_text())
        self.assert_clean(d.mnt)

    def test_sigint(self):
        d = self.mount(self.make_lower())
        self.check_lower_visible(d.mnt)
        d.proc.send_signal(signal.SIGINT)
        self.assertEqual(d.wait_exit(), 0, d.stderr_text())
        self.assert_clean(d.mnt)

    def test_sigterm_to_a_helper_thread(self):
        # The kernel hands a process's signal to any thread that does not
        # block it (the main thread may be passed over: stopped by a tracer,
        # or a signal already pending). Sent to a prefetch worker, which waits
        # on a condition variable and not on the loop, it must end the loop
        # all the same (before: the daemon went on until the next request).
        # Nothing reads the mount: no request comes to wake the loop.
        d = self.mount(self.make_lower(), opts=["cache.policy=future", "cache.prefetch=2"])

        def prefetch_threads():
            tids = []
            for tid in os.listdir("/proc/%d/task" % d.proc.pid):
                with open("/proc/%d/task/%s/comm" % (d.proc.pid, tid)) as f:
                    if f.read().strip() == "prefetch":
                        tids.append(int(tid))
            return tids
        # Each worker names itself as it starts.
        self.assertTrue(et.wait_for(lambda: len(prefetch_threads()) == 2, 30), "prefetch threads")
        tids = prefetch_threads()
        libc = ctypes.CDLL(None, use_errno=True)
        SYS_tgkill = 234  # x86_64
        self.assertEqual(libc.syscall(SYS_tgkill, d.proc.pid, tids[0], signal.SIGTERM), 0,
                         os.strerror(ctypes.get_errno()))
        self.assertEqual(d.wait_exit(), 0, d.stderr_text())
        self.assert_clean(d.mnt)

    def test_sigterm_idle(self):
        d = self.mount(self.make_lower())
        d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait_exit(), 0, d.stderr_text())
        self.assert_clean(d.mnt)

    def test_fusermount_u(self):
        d = self.mount(self.make_lower())
        self.check_lower_visible(d.mnt)
        self.assertEqual(d.unmount(), 0, d.stderr_text())
        self.assert_clean(d.mnt)

    def test_umount(self):
        d = self.mount(self.make_lower())
        subprocess.run(["umount", d.mnt], check=True)
        self.assertEqual(d.wait_exit(), 0, d.stderr_text())
        self.assert_clean(d.mnt)

    def test_remount_same_mountpoint(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        for sig in (None, signal.SIGTERM, None):
            d = self.mount(lower, mnt=mnt)
            self.check_lower_visible(mnt)
            if sig is None:
                self.assertEqual(d.unmount(), 0)
            else:
                d.proc.send_signal(sig)
                self.assertEqual(d.wait_exit(), 0)
            self.assert_clean(mnt)

    def test_auto_unmount_after_sigkill(self):
        d = self.mount(self.make_lower(), opts=["auto_unmount"])
        self.check_lower_visible(d.mnt)
        # The watcher has a name of its own: `pgrep -x epochfs | head -1` or
        # a search of argv for the daemon's finds the daemon, never it.
        def find_watchers():
            found = []
            for p in os.listdir("/proc"):
                try:
                    with open("/proc/%s/cmdline" % p, "rb") as f:
                        argv = [a.decode() for a in f.read().split(b"\0") if a]
                    with open("/proc/%s/comm" % p) as f:
                        comm = f.read().strip()
                except (OSError, ValueError):
                    continue
                if d.mnt in argv and int(p) != d.proc.pid:
                    found.append((argv[0], comm))
            return found
        # Until the re-executed watcher reaches its main (slow under a
        # sanitizer), its comm is the exec'd file's name ("exe").
        watchers = []

        def named():
            watchers[:] = find_watchers()
            return len(watchers) == 1 and watchers[0][1] != "exe"
        et.wait_for(named, 30 * et.TIME_SCALE)
        self.assertEqual(len(watchers), 1, watchers)
        self.assertEqual(watchers[0][0], "epochfs-unmount-watcher")
        self.assertEqual(watchers[0][1], "epochfs-unmount")
        with open("/proc/%d/comm" % d.proc.pid) as f:
            self.assertEqual(f.read().strip(), "epochfs")
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(timeout=5 * et.TIME_SCALE)

        def clean():
            if et.is_mounted(d.mnt):
                return False
            try:
                os.stat(d.mnt)
            except OSError as e:
                return e.errno != errno.ENOTCONN
            return True
        self.assertTrue(et.wait_for(clean, 3.0),
                        "mount left after SIGKILL with auto_unmount: %s"
                        % et.mount_entries(d.mnt))
        self.assertEqual(os.listdir(d.mnt), [])


class DaemonModeTest(LowerMixin, et.MountTestCase):
    def wait_pids_gone(self, pids):
        self.assertTrue(et.wait_for(lambda: not any(pid_alive(p) for p in pids), et.EXIT_TIMEOUT),
                        "daemon still running: %s" % pids)

    def track(self, mnt):
        def kill_leftovers():
            for p in find_daemon_pids(mnt):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        self.addCleanup(kill_leftovers)
        self.addCleanup(et.force_unmount, mnt)

    def test_background(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.track(mnt)
        cmd = self.epochfs_cmd(lower, mnt, ["cache.memory=32MiB"], foreground=False)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30 * et.TIME_SCALE,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The mount is ready when the parent returns.
        self.assertTrue(et.is_mounted(mnt))
        self.assertEqual(et.read_file(os.path.join(mnt, ".epochfs", "version")).decode(), et.VERSION_TEXT)
        self.check_lower_visible(mnt)
        pids = find_daemon_pids(mnt)
        self.assertEqual(len(pids), 1, pids)
        subprocess.run(["fusermount3", "-u", mnt], check=True)
        self.wait_pids_gone(pids)
        self.assertFalse(et.is_mounted(mnt))

    def test_background_logs_to_log_file(self):
        """log.file: a background mount's lines are in the file (in a
        container with no syslog they would be lost), the mount's line says
        where they go, and the file is the daemon's own (0600)."""
        lower = os.path.realpath(self.make_lower())
        mnt = os.path.realpath(self.make_mountpoint())
        self.track(mnt)
        logf = os.path.join(self.tmp, "epochfs.log")
        cmd = self.epochfs_cmd(lower, mnt, ["cache.memory=32MiB", "log.file=" + logf],
                               foreground=False)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30 * et.TIME_SCALE,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("lost", r.stderr)
        with open(logf) as f:
            text = f.read()
        self.assertIn("info: mounted %s at %s" % (lower, mnt), text)
        self.assertIn("log lines go to syslog (facility daemon, ident epochfs) and %s "
                      "(rotated at 10485760 bytes, 5 kept)" % logf, text)
        self.assertEqual(os.stat(logf).st_mode & 0o777, 0o600)
        pids = find_daemon_pids(mnt)
        subprocess.run(["fusermount3", "-u", mnt], check=True)
        self.wait_pids_gone(pids)
        with open(logf) as f:
            self.assertIn("info: unmounted " + mnt, f.read())

    def test_a_log_file_not_the_daemons_own_fails_the_mount(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.track(mnt)
        target = os.path.join(self.tmp, "target.log")
        open(target, "w").close()
        link = os.path.join(self.tmp, "link.log")
        os.symlink(target, link)
        r = subprocess.run(self.epochfs_cmd(lower, mnt, ["log.file=" + link], foreground=False),
                           capture_output=True, text=True, timeout=30 * et.TIME_SCALE,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 1)
        self.assertIn("log.file %s: " % link, r.stderr)
        self.assertIn("symbolic link", r.stderr)
        self.assertFalse(et.is_mounted(mnt))

    def test_background_without_syslog_says_its_lines_are_lost(self):
        if os.path.exists("/dev/log"):
            self.skipTest("this host has syslog (/dev/log)")
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.track(mnt)
        r = subprocess.run(self.epochfs_cmd(lower, mnt, foreground=False), capture_output=True,
                           text=True, timeout=30 * et.TIME_SCALE, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no syslog here (/dev/log is missing): the log lines of this background "
                      "mount are lost; set log.file", r.stderr)
        pids = find_daemon_pids(mnt)
        subprocess.run(["fusermount3", "-u", mnt], check=True)
        self.wait_pids_gone(pids)

    def test_background_sigterm(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.track(mnt)
        r = subprocess.run(self.epochfs_cmd(lower, mnt, foreground=False), capture_output=True,
                           text=True, timeout=30 * et.TIME_SCALE, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        pids = find_daemon_pids(mnt)
        self.assertEqual(len(pids), 1, pids)
        os.kill(pids[0], signal.SIGTERM)
        self.wait_pids_gone(pids)
        self.assertTrue(et.wait_for(lambda: not et.is_mounted(mnt), 3.0))

    def path_with_epochfs(self):
        bindir = self.make_dir("bin")
        # mount.fuse3 runs `epochfs LOWER MNT -o ...`: this one reads no
        # config file of the host's (hermetic, as epochfs_cmd).
        wrapper = os.path.join(bindir, "epochfs")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec "%s" --no-config "$@"\n' % os.path.abspath(et.epochfs_bin()))
        os.chmod(wrapper, 0o755)
        env = dict(os.environ)
        env["PATH"] = bindir + ":" + env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        return env

    def check_helper_mount(self, mnt, budget):
        self.assertTrue(et.wait_for(lambda: et.is_mounted(mnt), 5.0))
        self.assertEqual(et.read_file(os.path.join(mnt, ".epochfs", "version")).decode(), et.VERSION_TEXT)
        self.check_lower_visible(mnt)
        self.assertEqual(json.loads(et.read_file(os.path.join(mnt, ".epochfs", "stats")))["budget"], budget)
        ents = et.mount_entries(mnt)
        self.assertEqual(len(ents), 1, ents)
        pids = find_daemon_pids(mnt)
        self.assertEqual(len(pids), 1, pids)
        r = subprocess.run(["umount", mnt], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait_pids_gone(pids)
        self.assertFalse(et.is_mounted(mnt))

    def run_mount(self, cmd, env=None):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30 * et.TIME_SCALE,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, "%s: rc %d: %s" % (cmd, r.returncode, r.stderr))

    # mount(8) drops PATH before it runs /sbin/mount.fuse3, whose `sh -c epochfs`
    # then searches sh's default path. So `-t fuse.epochfs` is exercised in two
    # halves: mount.fuse3 (what mount(8) runs) with epochfs on PATH, and
    # mount(8) + mount.fuse3 with the old `-t fuse PROGRAM#SOURCE` form, which
    # runs the built binary by absolute path through the same helper.
    def test_mount_fuse3_helper(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.track(mnt)
        self.run_mount(["mount.fuse3", lower, mnt, "-t", "epochfs", "-o",
                        "rw,cache.memory=24MiB,cache.policy=lru,nodev,nosuid,noatime,dev,suid"],
                       env=self.path_with_epochfs())
        self.check_helper_mount(mnt, 24 * MiB)

    def test_mount_t_fuse(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.track(mnt)
        self.run_mount(["mount", "-t", "fuse", "%s#%s" % (os.path.abspath(et.epochfs_bin()), lower),
                        mnt, "-o", "cache.memory=24MiB,cache.policy=lru,nodev,nosuid,noatime"])
        self.check_helper_mount(mnt, 24 * MiB)

    def test_mount_t_fuse_epochfs_installed(self):
        sh_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        if not shutil.which("epochfs", path=sh_path):
            self.skipTest("no epochfs installed in sh's default PATH (%s)" % sh_path)
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.track(mnt)
        self.run_mount(["mount", "-t", "fuse.epochfs", lower, mnt, "-o", "cache.memory=24MiB"])
        self.check_helper_mount(mnt, 24 * MiB)

    def test_mount_helper_error(self):
        mnt = self.make_mountpoint()
        self.track(mnt)
        r = subprocess.run(["mount.fuse3", self.make_lower(), mnt, "-t", "epochfs", "-o",
                            "cache.memory=banana"],
                           env=self.path_with_epochfs(), capture_output=True, text=True,
                           timeout=30 * et.TIME_SCALE, stdin=subprocess.DEVNULL)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("epochfs: ", r.stderr)
        self.assertFalse(et.is_mounted(mnt))

    def test_fstab(self):
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        self.track(mnt)
        fstab = os.path.join(self.tmp, "fstab")
        with open(fstab, "w") as f:
            f.write("# test fstab\n%s#%s %s fuse cache.memory=40MiB,nodev,noatime,"
                    "default_permissions 0 0\n"
                    % (os.path.abspath(et.epochfs_bin()), lower, mnt))
        self.run_mount(["mount", "--fstab", fstab, mnt])
        self.check_helper_mount(mnt, 40 * MiB)


class MountEdgeTest(LowerMixin, et.MountTestCase):
    """What a careless operator meets: relative paths, a second mount on the
    same directory, a mountpoint inside LOWER, max_read, fusermount3's no."""

    def run_cmd(self, cmd, cwd=None, as_nobody=False):
        pre = None
        if as_nobody:
            def pre():
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
        return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, preexec_fn=pre,
                              timeout=30 * et.TIME_SCALE, stdin=subprocess.DEVNULL)

    def background(self, lower, mnt, opts=None, cwd=None):
        self.addCleanup(DaemonModeTest.track, self, os.path.join(cwd or "", mnt))
        return self.run_cmd(self.epochfs_cmd(lower, mnt, opts, foreground=False), cwd=cwd)

    def test_relative_paths_then_sigterm_unmount_the_right_directory(self):
        self.make_lower()
        mnt = self.make_mountpoint()
        before = all_mounts()
        r = self.background("lower", os.path.basename(mnt), cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(et.is_mounted(mnt))
        self.check_lower_visible(mnt)
        # The command line names the mountpoint relatively: find the daemon
        # by its arguments as seen from where it was started.
        pids = [p for p in find_daemon_pids(os.path.basename(mnt), cwd=self.tmp)]
        self.assertEqual(len(pids), 1, pids)
        os.kill(pids[0], signal.SIGTERM)
        self.assertTrue(et.wait_for(lambda: not any(pid_alive(p) for p in pids), et.EXIT_TIMEOUT))
        # The mount is gone (not left dead), and nothing else was unmounted.
        self.assertFalse(et.is_mounted(mnt))
        self.assertEqual(os.listdir(mnt), [])
        self.assertEqual(all_mounts(), before)

    def test_a_second_mount_on_the_same_directory_is_refused(self):
        lower = self.make_lower()
        d = self.mount(lower)
        for fg in (True, False):
            r = self.run_cmd(self.epochfs_cmd(lower, d.mnt, foreground=fg))
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("already a mount point", r.stderr)
            self.assertEqual(len(r.stderr.strip().split("\n")), 1, r.stderr)
        self.check_lower_visible(d.mnt)
        self.assertEqual(len(et.mount_entries(d.mnt)), 1)
        self.assertEqual(d.unmount(), 0)

    def test_a_mountpoint_inside_lower_is_refused(self):
        lower = self.make_lower()
        for mnt in (lower, os.path.join(lower, "sub")):
            for fg in (True, False):
                r = self.run_cmd(self.epochfs_cmd(lower, mnt, foreground=fg))
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("inside the dataset", r.stderr)
                self.assertFalse(et.is_mounted(mnt))

    def test_max_read_works_or_is_refused(self):
        lower = self.make_lower()
        big = et.det_bytes(3 << 20, 9)
        et.write_file(os.path.join(lower, "big.bin"), big)
        mnt = self.make_mountpoint()
        r = self.background(lower, mnt, opts=["max_read=65536", "fuse.kernel_cache=false"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("max_read=65536", " ".join(e[3] for e in et.mount_entries(mnt)))
        self.assertEqual(et.read_file_raw(os.path.join(mnt, "big.bin")), big)
        self.check_lower_visible(mnt)
        d = self.mount(lower, opts=["max_read=131072"])
        self.assertEqual(et.read_file_raw(d.path("big.bin")), big)
        for bad in ("max_read=abc", "max_read=0", "max_read=100"):
            r = self.run_cmd(self.epochfs_cmd(lower, self.make_mountpoint(), [bad], foreground=False))
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("max_read", r.stderr)

    def test_fusermount3_refusal_names_its_reason(self):
        try:
            with open("/etc/fuse.conf") as f:
                if any(l.strip() == "user_allow_other" for l in f):
                    self.skipTest("user_allow_other is set in /etc/fuse.conf")
        except FileNotFoundError:
            pass  # no configuration: fusermount3 refuses allow_other too
        # Unprivileged mounts need /dev/fuse open to all (as on most hosts):
        # then fusermount3 is asked, and refuses allow_other.
        mode = os.stat("/dev/fuse").st_mode & 0o777
        if mode != 0o666:
            os.chmod("/dev/fuse", 0o666)
            self.addCleanup(os.chmod, "/dev/fuse", mode)
        lower = self.make_lower()
        mnt = self.make_mountpoint()
        for p in (self.tmp, lower, os.path.join(lower, "sub")):
            os.chmod(p, 0o755)
        os.chown(mnt, NOBODY, NOBODY)
        r = self.run_cmd(self.epochfs_cmd(lower, mnt, ["allow_other"], foreground=False),
                         as_nobody=True)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("user_allow_other", r.stderr)
        last = r.stderr.strip().split("\n")[-1]
        self.assertTrue(last.startswith("epochfs: cannot mount " + mnt + ": "), last)
        self.assertFalse(last.endswith(": "), last)
        self.assertFalse(et.is_mounted(mnt))


if __name__ == "__main__":
    et.main()
