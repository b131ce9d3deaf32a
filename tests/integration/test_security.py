#!/usr/bin/python3
"""A mount shared by hostile users (allow_other).

HostileBytesTest: hostile bytes into every control file.

Every file of `.epochfs/jobs/NAME/` that accepts writes gets, from its owner
and from a second user (nobody), input that no parser expects: random bytes,
invalid UTF-8, NUL bytes, a 1 MiB line, only separators, an empty file, a
sparse write at a large offset. Asserted after each write: the daemon is
alive; `status` of the job and `.epochfs/stats` are valid JSON; every file of
the dataset still reads back byte-exact; the other user's writes were refused
and changed nothing.

Also the crash of issue 12: a spill file whose name is not UTF-8, named in
`spill_schedule` and made resident by `progress`, used to make the next read
of `status` throw from the JSON writer and end the daemon. Its name must now
come out with U+FFFD in place of the bad byte.

UserLimitsTest: what one user can make the daemon hold is bounded per user
(limits.*): jobs, control files open for writing, bytes buffered in them; a
write that would leave a hole in a control file is refused; `pids` accepts
only the writer's own processes (root: any), so no user can claim another's
reads. Each limit is hit by `nobody` while root and the limit's other side
stay unaffected.

OwnerReachTest: a job's samples are checked and prefetched as its owner
reaches LOWER: what lies behind a directory the owner may not search is
answered as missing, never loaded, never counted in `stats` `used`.

Standard library only; exit 77 (SKIP) without /dev/fuse or root.
"""

import errno
import json
import os
import random
import threading

import epochfs_test as et

NOBODY = 65534
KiB = 1024
WAIT = 120 * et.TIME_SCALE
CONTROL_FILES = ["config", "samples", "order/0", "order/1", "epoch", "progress", "pids",
                 "spill_schedule"]


def payloads():
    rng = random.Random(12)
    return {
        "random": rng.randbytes(4096),
        "invalid-utf8": b"\xff\xfe\xfd\n\xc3\x28\n\xa0\xa1\n\xe2\x28\xa1\n",
        "nul": b"a\x00b\n\x00\x00\n1\x00\n",
        "long-line": b"9" * (1 << 20) + b"\n",
        "separators": b"\n\r\t \n\n,,;;==\n",
        "empty": b"",
        "toml-ish": b'batch_size = "\xff"\n[x\xff]\nroot = "\\u0000"\nepochs = 1e999\n',
        "numbers": b"-1\n18446744073709551616\n0x10\n1e3\n+7\n",
        # One dotted key of 32,000 parts (64 KB): TOML++ recursed once per
        # part and ran off a FUSE thread's stack; a header and inline tables
        # nest the same way.
        "deep-key": b".".join([b"a"] * 32000) + b" = 1\n",
        "deep-header": b"[" + b".".join([b"a"] * 32000) + b"]\nx = 1\n",
        "deep-inline": b"x = " + b"{a.a.a.a = " * 4000 + b"1" + b"}" * 4000 + b"\n",
    }


def write_ctl(path, data):
    """One control-file write; the errno of whichever step failed, or 0."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except OSError as e:
        return e.errno
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view[:1 << 20])
            view = view[n:]
    except OSError as e:
        try:
            os.close(fd)
        except OSError:
            pass
        return e.errno
    try:
        os.close(fd)
    except OSError as e:
        return e.errno
    return 0


def sparse_write(path, offset):
    """A 1-byte pwrite at `offset`; the errno of the failing step, or 0."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return e.errno
    err = 0
    try:
        os.pwrite(fd, b"1", offset)
    except OSError as e:
        err = e.errno
    try:
        os.close(fd)
    except OSError as e:
        err = err or e.errno
    return err


class HostileBytesTest(et.MountTestCase):
    maxDiff = None
    ASYNC_SPILL = ("applied", "prefetches", "writeouts", "missing", "resident")

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        os.chmod(self.tmp, 0o755)
        os.chmod(self.lower, 0o755)
        self.want = {}
        for i in range(20):
            rel = "d/f%02d.bin" % i
            data = et.det_bytes(3 * KiB + i, i)
            et.write_file(os.path.join(self.lower, rel), data)
            self.want[rel] = data
        os.chmod(os.path.join(self.lower, "d"), 0o755)
        for rel in self.want:
            os.chmod(os.path.join(self.lower, rel), 0o644)
        spill = self.make_dir("spill")
        self.d = self.mount(self.lower, opts=["cache.policy=epoch", "allow_other",
                                              "spill.path=" + spill])

    @staticmethod
    def read_status(jd):
        with open(os.path.join(jd, "status"), "rb") as f:
            return json.loads(f.read().decode("utf-8"))

    def check_alive(self, jd, what):
        d = self.d
        self.assertTrue(d.alive(), "%s: the daemon died; stderr:\n%s" % (what, d.stderr_text()))
        st = d.stats()
        self.assert_stats_sane(st)
        status = self.read_status(jd)
        for rel, data in self.want.items():
            self.assertEqual(et.read_file_raw(d.path(rel)), data, "%s: %s" % (what, rel))
        return status

    def test_every_control_file_survives_hostile_bytes(self):
        jd = self.d.path(".epochfs", "jobs", "victim")
        os.mkdir(jd)
        # A valid declaration first: what the hostile writes must not change.
        self.assertEqual(write_ctl(os.path.join(jd, "config"), b"batch_size = 4\nepochs = 2\nroot = \"d\"\n"), 0)
        self.assertEqual(write_ctl(os.path.join(jd, "samples"),
                                   "".join("f%02d.bin\n" % i for i in range(20)).encode()), 0)
        self.assertEqual(write_ctl(os.path.join(jd, "order", "0"),
                                   " ".join(map(str, range(20))).encode() + b"\n"), 0)
        declared = self.check_alive(jd, "valid declaration")
        self.assertEqual(declared["samples"], 20)
        self.assertEqual(declared["declared_epochs"], [0])

        for name in CONTROL_FILES:
            path = os.path.join(jd, *name.split("/"))
            for kind, data in payloads().items():
                what = "%s <- %s" % (name, kind)
                # Another user: refused, and nothing changes.
                # (`last_error` tells the owner that another user was refused.)
                before = self.read_status(jd)
                before.pop("last_error")
                # What the spill scheduler's thread counts as it applies the
                # owner's earlier progress reports may change at any moment.
                for k in self.ASYNC_SPILL:
                    before.get("spill", {}).pop(k, None)

                def attempt():
                    err = write_ctl(path, data) or sparse_write(path, 0)
                    if err:
                        raise OSError(err, "refused")
                err = et.as_user(NOBODY, NOBODY, attempt)
                self.assertNotEqual(err, 0, "nobody could write %s" % what)
                after = self.read_status(jd)
                after.pop("last_error")
                for k in self.ASYNC_SPILL:
                    after.get("spill", {}).pop(k, None)
                self.assertEqual(after, before, "nobody changed the job: " + what)
                self.check_alive(jd, "nobody: " + what)
                # The owner: accepted or refused, the daemon carries on.
                write_ctl(path, data)
                self.check_alive(jd, "owner: " + what)
            for offset in (1 << 20, 1 << 30, (1 << 40) - 1):
                sparse_write(path, offset)
                self.check_alive(jd, "owner: %s <- 1 byte at %d" % (name, offset))

    def test_a_deep_toml_config_is_refused_by_its_depth(self):
        jd = self.d.path(".epochfs", "jobs", "deep")
        os.mkdir(jd)
        for kind in ("deep-key", "deep-header", "deep-inline"):
            self.assertEqual(write_ctl(os.path.join(jd, "config"), payloads()[kind]), errno.EINVAL, kind)
            status = self.check_alive(jd, kind)
            self.assertIn("nested deeper than 64 levels", status["last_error"], kind)

    def test_a_spill_name_that_is_not_utf8_in_status(self):
        jd = self.d.path(".epochfs", "jobs", "bytes")
        os.mkdir(jd)
        bad = b"act\xffl0"
        data = et.det_bytes(300 * KiB, 7)
        with open(os.path.join(os.fsencode(self.d.mnt), b".spill", bad), "wb") as f:
            f.write(data)
        self.assertEqual(write_ctl(os.path.join(jd, "spill_schedule"), bad + b"\n" + bad + b"\n"), 0)
        self.assertEqual(write_ctl(os.path.join(jd, "progress"), b"0\n"), 0)
        status = self.check_alive(jd, "non-UTF-8 spill name")
        self.assertIn("spill", status)
        text = json.dumps(status, ensure_ascii=False)
        self.assertNotIn("\udcff", text)
        with open(os.path.join(os.fsencode(self.d.mnt), b".spill", bad), "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertTrue(self.d.alive())
        self.assertEqual(self.d.unmount(), 0)



class LinearRepliesTest(et.MountTestCase):
    """status of a job whose spill_schedule names 300,000 distinct paths: the
    reply is built in time linear in the schedule (it was quadratic: about
    4.5e10 string comparisons, many minutes on one FUSE thread). The bound
    below is a liveness bound, a hundred times what linear needs."""

    def test_status_of_a_long_spill_schedule(self):
        lower = self.make_dir("lower")
        spill = self.make_dir("spill")
        d = self.mount(lower, opts=["spill.path=" + spill])
        jd = d.path(".epochfs", "jobs", "long")
        os.mkdir(jd)
        n = 300000
        self.assertEqual(write_ctl(os.path.join(jd, "spill_schedule"),
                                   "".join("a/%07d\n" % i for i in range(n)).encode()), 0)
        result = {}

        def read():
            with open(os.path.join(jd, "status"), "rb") as f:
                result["status"] = json.loads(f.read())
        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(60 * et.TIME_SCALE)
        self.assertFalse(t.is_alive(), "status of a %d-step schedule took too long" % n)
        self.assertEqual(result["status"]["spill"]["steps"], n)
        self.assertTrue(d.alive())


def in_child_as_nobody(fn):
    return in_child_as(NOBODY, fn)


def in_child_as(uid, fn, groups=()):
    """Runs fn() as uid (group the same; supplementary `groups`) in a forked
    child; returns what it returned (JSON-able), or raises AssertionError with
    the child's exception."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups(list(groups))
            os.setgid(uid)
            os.setuid(uid)
            out = {"ok": fn()}
        except BaseException as e:  # reported to the parent
            out = {"error": "%s: %s" % (type(e).__name__, e)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    out = json.loads(data or b'{"error": "child died"}')
    if "error" in out:
        raise AssertionError("as uid %d: %s" % (uid, out["error"]))
    return out["ok"]


class UserLimitsTest(et.MountTestCase):
    maxDiff = None

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        os.chmod(self.tmp, 0o755)
        os.chmod(self.lower, 0o755)
        et.write_file(os.path.join(self.lower, "a.bin"), et.det_bytes(5000, 1))
        os.chmod(os.path.join(self.lower, "a.bin"), 0o644)
        self.d = self.mount(self.lower, opts=[
            "cache.policy=epoch", "allow_other", "limits.jobs_per_user=3",
            "limits.control_files_per_user=4", "limits.control_bytes_per_user=1MiB"])
        self.jobs = self.d.path(".epochfs", "jobs")

    def test_jobs_per_user(self):
        jobs = self.jobs

        def make():
            out = []
            for i in range(5):
                try:
                    os.mkdir(os.path.join(jobs, "n%d" % i))
                    out.append(0)
                except OSError as e:
                    out.append(e.errno)
            return out
        self.assertEqual(in_child_as_nobody(make), [0, 0, 0, errno.ENOSPC, errno.ENOSPC])
        for i in range(5):  # root is not bounded
            os.mkdir(os.path.join(jobs, "r%d" % i))
        # Root sees the keys of other users' jobs (NAME@UID).
        self.assertEqual(sorted(os.listdir(jobs)),
                         sorted(["n%d@%d" % (i, NOBODY) for i in range(3)] +
                                ["r%d" % i for i in range(5)]))
        os.rmdir(os.path.join(jobs, "n0@%d" % NOBODY))
        self.assertEqual(in_child_as_nobody(lambda: os.mkdir(os.path.join(jobs, "n9"))), None)
        self.assertTrue(self.d.alive())

    def test_control_files_and_bytes_per_user(self):
        jobs = self.jobs

        def hold():
            os.mkdir(os.path.join(jobs, "mine"))
            paths = [os.path.join(jobs, "mine", n) for n in ("config", "samples", "order/0",
                                                             "order/1", "epoch")]
            fds, out = [], {}
            for p in paths:
                try:
                    fds.append(os.open(p, os.O_WRONLY | os.O_TRUNC))
                except OSError as e:
                    out["open5"] = e.errno
            out["opened"] = len(fds)
            # 1 MiB for all open files together: 600 KiB fit once, not twice.
            out["w1"] = os.write(fds[0], b"x" * (600 << 10))
            try:
                os.write(fds[1], b"y" * (600 << 10))
            except OSError as e:
                out["w2"] = e.errno
            # A hole: refused whatever its size.
            try:
                os.pwrite(fds[2], b"1", 4096)
            except OSError as e:
                out["hole"] = e.errno
            # Closing frees the file and its bytes for the next.
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass  # the bad config is refused at close: EINVAL
            # The kernel sends RELEASE after close() returns, asynchronously:
            # the share comes back soon after, not at once.
            def again():
                try:
                    fd = os.open(paths[1], os.O_WRONLY | os.O_TRUNC)
                except OSError as e:
                    return (e.errno, None)
                try:
                    return (0, os.write(fd, b"z" * (600 << 10)))
                except OSError as e:
                    return (e.errno, None)
                finally:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            last = {}

            def freed():
                last["r"] = again()
                return last["r"][0] == 0
            et.wait_for(freed, et.EXIT_TIMEOUT)
            err, written = last["r"]
            out["w3"] = written if err == 0 else err
            return out
        out = in_child_as_nobody(hold)
        self.assertEqual(out, {"open5": errno.EMFILE, "opened": 4, "w1": 600 << 10,
                               "w2": errno.EDQUOT, "hole": errno.EINVAL, "w3": 600 << 10})
        # Root is not bounded by nobody's use, nor by its own.
        os.mkdir(os.path.join(jobs, "root"))
        fds = [os.open(os.path.join(jobs, "root", n), os.O_WRONLY | os.O_TRUNC)
               for n in ("config", "samples", "order/0", "order/1", "epoch", "pids")]
        os.write(fds[1], b"a.bin\n" * (300 << 10))
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.assertTrue(self.d.alive())

    def test_pids_only_of_own_processes(self):
        jobs = self.jobs
        victim = os.fork()
        if victim == 0:  # root's "trainer": sleeps until killed
            time_to_live = 600
            os.execvp("sleep", ["sleep", str(time_to_live)])
        self.addCleanup(lambda: (os.kill(victim, 9), os.waitpid(victim, 0)))

        def claim():
            os.mkdir(os.path.join(jobs, "thief"))
            out = {}
            for pid in (1, victim):
                try:
                    with open(os.path.join(jobs, "thief", "pids"), "w") as f:
                        f.write("%d\n" % pid)
                    out[str(pid)] = 0
                except OSError as e:
                    out[str(pid)] = e.errno
            with open(os.path.join(jobs, "thief", "pids")) as f:
                out["pids"] = f.read().split()
            with open(os.path.join(jobs, "thief", "pids"), "a") as f:
                f.write("%d\n" % os.getpid())  # its own: accepted
            return out
        out = in_child_as_nobody(claim)
        self.assertEqual(out["1"], errno.EPERM, out)
        self.assertEqual(out[str(victim)], errno.EPERM, out)
        self.assertNotIn("1", out["pids"])
        self.assertNotIn(str(victim), out["pids"])
        # The victim's own registration still works.
        os.mkdir(os.path.join(jobs, "victim"))
        with open(os.path.join(jobs, "victim", "pids"), "w") as f:
            f.write("%d\n" % victim)
        with open(os.path.join(jobs, "victim", "pids")) as f:
            self.assertIn(str(victim), f.read().split())
        self.assertTrue(self.d.alive())



class JobNamesTest(et.MountTestCase):
    """Job names are per user: a user's mkdir of a name another user holds
    succeeds and makes the user's own job (no EEXIST tells that the name is
    taken); each sees and uses only their own; root sees NAME@UID keys. The
    kernel's entries are shared by all users, so the test interleaves the
    users' lookups of the same path."""

    ALICE, BOB = 23458, 23459

    def test_two_users_one_name(self):
        lower = self.make_dir("lower")
        os.chmod(self.tmp, 0o755)
        d = self.mount(lower, opts=["allow_other"])
        jobs = d.path(".epochfs", "jobs")
        j = os.path.join(jobs, "train")

        def make(batch):
            def fn():
                os.mkdir(j)
                with open(os.path.join(j, "config"), "w") as f:
                    f.write("batch_size = %d\nepochs = 2\n" % batch)
                with open(os.path.join(j, "status")) as f:
                    s = json.load(f)
                return [s["name"], s["batch_size"], s["owner"], os.listdir(jobs)]
            return fn

        def mine():
            with open(os.path.join(j, "status")) as f:
                s = json.load(f)
            return [s["owner"], s["batch_size"], os.stat(j).st_uid]

        os.mkdir(j)  # root's own "train"
        with open(os.path.join(j, "config"), "w") as f:
            f.write("batch_size = 1\nepochs = 2\n")
        self.assertEqual(in_child_as(self.ALICE, make(3)), ["train", 3, self.ALICE, ["train"]])
        self.assertEqual(in_child_as(self.BOB, make(5)), ["train", 5, self.BOB, ["train"]])
        # The same path, looked up in turn by each user, is each one's own job.
        for _ in range(3):
            self.assertEqual(in_child_as(self.ALICE, mine), [self.ALICE, 3, self.ALICE])
            self.assertEqual(in_child_as(self.BOB, mine), [self.BOB, 5, self.BOB])
            self.assertEqual(os.stat(j).st_uid, 0)
        self.assertEqual(sorted(os.listdir(jobs)),
                         ["train", "train@%d" % self.ALICE, "train@%d" % self.BOB])
        with open(os.path.join(jobs, "train@%d" % self.BOB, "status")) as f:
            self.assertEqual(json.load(f)["name"], "train@%d" % self.BOB)
        # A name with '@' is no user's way into another's job.
        def probe():
            out = []
            for fn in (lambda: os.stat(os.path.join(jobs, "train@%d" % self.ALICE)),
                       lambda: os.mkdir(os.path.join(jobs, "x@%d" % self.ALICE))):
                try:
                    fn()
                    out.append(0)
                except OSError as e:
                    out.append(e.errno)
            return out
        self.assertEqual(in_child_as(self.BOB, probe), [errno.ENOENT, errno.EINVAL])
        # Bob's rmdir removes Bob's job only; the name is free for him again.
        self.assertIsNone(in_child_as(self.BOB, lambda: os.rmdir(j)))
        self.assertEqual(in_child_as(self.ALICE, mine), [self.ALICE, 3, self.ALICE])
        self.assertEqual(in_child_as(self.BOB, lambda: os.listdir(jobs)), [])
        self.assertEqual(in_child_as(self.BOB, make(7)), ["train", 7, self.BOB, ["train"]])
        stats = d.stats()
        self.assertEqual(sorted(r["name"] for r in stats["jobs"]),
                         ["train", "train@%d" % self.ALICE, "train@%d" % self.BOB])
        self.assertTrue(d.alive())


class SpillLimitsTest(et.MountTestCase):
    """Per-user bounds of the spill area: open spill files (a descriptor each
    in the daemon; limits.spill_files_per_user, EMFILE) and the steps of one
    spill_schedule (limits.spill_schedule_steps, EINVAL with the reason in
    last_error), the bytes of a user's spill files together
    (limits.spill_bytes_per_user, ENOSPC). Root is bounded by none."""

    def setUp(self):
        super().setUp()
        lower = self.make_dir("lower")
        spill = self.make_dir("spill")
        os.chmod(self.tmp, 0o755)  # nobody reaches the mount
        self.d = self.mount(lower, opts=["allow_other", "spill.path=" + spill,
                                         "limits.spill_files_per_user=3",
                                         "limits.spill_schedule_steps=5",
                                         "limits.spill_bytes_per_user=1MiB"])

    def test_spill_bytes_per_user(self):
        sp = self.d.path(".spill")
        mib = 1 << 20

        def fill():
            out = {}
            with open(os.path.join(sp, "a"), "wb") as f:
                f.write(b"\1" * (mib - 4096))
            with open(os.path.join(sp, "b"), "wb", buffering=0) as f:
                f.write(b"\2" * 4096)  # exactly the bound
                try:
                    f.write(b"\3")
                    out["past"] = 0
                except OSError as e:
                    out["past"] = e.errno
            try:
                os.truncate(os.path.join(sp, "a"), mib)
                out["truncate"] = 0
            except OSError as e:
                out["truncate"] = e.errno
            out["sizes"] = [os.path.getsize(os.path.join(sp, n)) for n in ("a", "b")]
            os.unlink(os.path.join(sp, "a"))  # gives the room back
            with open(os.path.join(sp, "c"), "wb") as f:
                f.write(b"\4" * (mib - 4096))
            return out
        self.assertEqual(in_child_as_nobody(fill),
                         {"past": errno.ENOSPC, "truncate": errno.ENOSPC,
                          "sizes": [mib - 4096, 4096]})
        # Another user is not charged for nobody's bytes, nor is root.
        def other():
            with open(os.path.join(sp, "o"), "wb") as f:
                return f.write(b"o" * mib)
        self.assertEqual(in_child_as(NOBODY - 1, other), mib)
        with open(os.path.join(sp, "root"), "wb") as f:
            f.write(b"r" * (3 * mib))
        with open(os.path.join(sp, "c@%d" % NOBODY), "rb") as f:  # root: by its key
            self.assertEqual(f.read(), b"\4" * (mib - 4096))
        self.assertTrue(self.d.alive())

    def test_users_together_leave_root_its_share(self):
        # The default per-user share (a third) of a 6 MiB area: two users
        # fill their shares, a third user's write past what users may share
        # together is ENOSPC, and root still writes a share of its own.
        lower = self.make_dir("lower2")
        spill = self.make_dir("spill2")
        d = self.mount(lower, opts=["allow_other", "spill.path=" + spill, "spill.max_bytes=6MiB"])
        sp = d.path(".spill")
        share = 6 * (1 << 20) * 33 // 100

        def write(name, n):
            def fn():
                try:
                    with open(os.path.join(sp, name), "wb") as f:
                        f.write(b"u" * n)
                    return 0
                except OSError as e:
                    return e.errno
            return fn
        self.assertEqual(in_child_as(NOBODY, write("a", share - 4096)), 0)
        self.assertEqual(in_child_as(NOBODY, write("a2", 8192)), errno.ENOSPC)  # past the share
        self.assertEqual(in_child_as(NOBODY - 1, write("b", share - 4096)), 0)
        self.assertEqual(in_child_as(NOBODY - 2, write("c", 300 * 1024)), errno.ENOSPC)
        with open(os.path.join(sp, "root"), "wb") as f:
            f.write(b"r" * (share - 4096))
        self.assertTrue(d.alive())

    def test_spill_entries_per_user(self):
        # Empty files and directories cost no bytes, but an inode and the
        # daemon's memory each: one user holds at most
        # limits.spill_entries_per_user of them, counted again at the next mount.
        lower = self.make_dir("lower3")
        spill = self.make_dir("spill3")
        opts = ["allow_other", "spill.path=" + spill, "limits.spill_entries_per_user=5"]
        d = self.mount(lower, opts=opts)

        def fill():
            sp = d.path(".spill")
            out = []
            os.mkdir(os.path.join(sp, "d1"))
            os.mkdir(os.path.join(sp, "d1", "d2"))
            for name in ("a", "d1/b", "d1/d2/c"):
                open(os.path.join(sp, name), "wb").close()
            for make in (lambda: open(os.path.join(sp, "x"), "wb").close(),
                         lambda: os.mkdir(os.path.join(sp, "d3"))):
                try:
                    make()
                    out.append(0)
                except OSError as e:
                    out.append(e.errno)
            open(os.path.join(sp, "a"), "wb").close()  # not a new entry: opens
            os.unlink(os.path.join(sp, "a"))
            open(os.path.join(sp, "y"), "wb").close()  # room again
            return out
        self.assertEqual(in_child_as(NOBODY, fill), [errno.ENOSPC, errno.ENOSPC])
        for i in range(8):  # root is bounded by none of this
            open(os.path.join(d.path(".spill"), "r%d" % i), "wb").close()
        self.assertEqual(d.unmount(), 0)
        d = self.mount(lower, opts=opts)

        def again():
            try:
                open(os.path.join(d.path(".spill"), "z"), "wb").close()
                return 0
            except OSError as e:
                return e.errno
        self.assertEqual(in_child_as(NOBODY, again), errno.ENOSPC)

    def test_open_spill_files_per_user(self):
        sp = self.d.path(".spill")

        def hold():
            out = {"opened": 0}
            fds = []
            for i in range(5):
                try:
                    fds.append(os.open(os.path.join(sp, "n%d" % i), os.O_CREAT | os.O_RDWR, 0o600))
                    out["opened"] += 1
                except OSError as e:
                    out.setdefault("refused", e.errno)
            for fd in fds:
                os.close(fd)

            # RELEASE reaches the daemon after close() returns: the share
            # comes back soon after, not at once.
            def again():
                try:
                    os.close(os.open(os.path.join(sp, "n4"), os.O_CREAT | os.O_RDWR, 0o600))
                    return True
                except OSError:
                    return False
            out["after_close"] = bool(et.wait_for(again, et.EXIT_TIMEOUT))
            return out
        self.assertEqual(in_child_as_nobody(hold),
                         {"opened": 3, "refused": errno.EMFILE, "after_close": True})
        fds = [os.open(os.path.join(sp, "r%d" % i), os.O_CREAT | os.O_RDWR, 0o600)
               for i in range(6)]  # root: unbounded
        for fd in fds:
            os.close(fd)
        self.assertTrue(self.d.alive())

    def test_schedule_steps_per_job(self):
        jobs = self.d.path(".epochfs/jobs")

        def write(text):
            os.mkdir(os.path.join(jobs, "mine"))
            out = {}
            for name, body in (("long", text * 6), ("fits", text * 5)):
                try:
                    with open(os.path.join(jobs, "mine", "spill_schedule"), "w") as f:
                        f.write(body)
                    out[name] = 0
                except OSError as e:
                    out[name] = e.errno
                if name == "long":
                    with open(os.path.join(jobs, "mine", "status")) as f:
                        out["error"] = json.load(f)["last_error"]
            with open(os.path.join(jobs, "mine", "spill_schedule")) as f:
                out["kept"] = len(f.read().split())
            return out
        out = in_child_as_nobody(lambda: write("a\n"))
        self.assertEqual(out["long"], errno.EINVAL, out)
        self.assertIn("at most 5 per schedule (limits.spill_schedule_steps)", out["error"])
        self.assertEqual(out["fits"], 0, out)
        self.assertEqual(out["kept"], 5, out)
        os.mkdir(os.path.join(jobs, "root"))
        with open(os.path.join(jobs, "root", "spill_schedule"), "w") as f:
            f.write("b\n" * 50)


class LowerFilesLimitTest(et.MountTestCase):
    """Dataset files too large for the cache are streamed from LOWER under
    cache.block_size = 0, a descriptor each in the daemon: at most limits.lower_files_per_user open
    per user (EMFILE past it), root unbounded, the bytes exact."""

    def test_streamed_files_per_user(self):
        lower = self.make_dir("lower")
        os.chmod(self.tmp, 0o755)
        os.chmod(lower, 0o755)
        data = {}
        for i in range(4):
            data[i] = et.det_bytes(400 * KiB, 30 + i)  # > 1 MiB / 4: streamed
            et.write_file(os.path.join(lower, "big%d" % i), data[i])
            os.chmod(os.path.join(lower, "big%d" % i), 0o644)
        d = self.mount(lower, opts=["allow_other", "cache.memory=1MiB", "cache.block_size=0",
                                    "limits.lower_files_per_user=2"])

        def hold():
            out = {"exact": 0}
            fds = []
            for i in range(3):
                try:
                    fds.append((i, os.open(d.path("big%d" % i), os.O_RDONLY)))
                except OSError as e:
                    out["refused"] = e.errno
            for i, fd in fds:
                got = b""
                while True:
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        break
                    got += chunk
                out["exact"] += got == data[i]
                os.close(fd)

            def again():
                try:
                    os.close(os.open(d.path("big3"), os.O_RDONLY))
                    return True
                except OSError:
                    return False
            out["after_close"] = bool(et.wait_for(again, et.EXIT_TIMEOUT))
            return out
        self.assertEqual(in_child_as_nobody(hold),
                         {"exact": 2, "refused": errno.EMFILE, "after_close": True})
        fds = [os.open(d.path("big%d" % i), os.O_RDONLY) for i in range(4)]  # root
        for fd in fds:
            os.close(fd)
        st = d.stats()
        # Counted and warned of: the two files read whole, uncached, and every
        # open that succeeded (2 + big3 at least once as nobody, 4 as root).
        self.assertGreaterEqual(st["streamed_bytes"], 2 * 400 * KiB, st)
        self.assertLessEqual(st["streamed_bytes"], st["bytes_read_lower"], st)
        self.assertGreaterEqual(st["streamed_opens"], 7, st)
        self.assertEqual((st["hits"], st["misses"], st["used"]), (0, 0, 0), st)
        self.assertTrue(any("uncached" in w and "max_object_bytes" in w
                            for w in st["warnings"]), st["warnings"])
        self.assertTrue(d.alive())


class DescriptorReserveTest(et.MountTestCase):
    """Users' open spill files hold descriptors in the daemon. Per-user bounds
    stop one user; all users together may hold at most the descriptor limit
    less a reserve (a quarter, at least 128), past which an open fails with
    ENFILE, so that the daemon can still load uncached dataset files for
    everyone. (Before, two users holding files exhausted the daemon's table
    and every other read of an uncached file failed with EIO.)"""

    LIMIT = 512  # the daemon's RLIMIT_NOFILE: at most 384 held by users
    A, B = 23460, 23461

    def hold(self, uid, sp, n):
        """A child of `uid` opens up to n spill files of its own and keeps
        them open; returns (pid, opened, first errno, release fd)."""
        r, w = os.pipe()
        r2, w2 = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.close(w2)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            fds, err = [], 0
            for i in range(n):
                try:
                    fds.append(os.open(os.path.join(sp, "h%d" % i), os.O_CREAT | os.O_RDWR, 0o600))
                except OSError as e:
                    err = e.errno
                    break
            os.write(w, json.dumps([len(fds), err]).encode())
            os.close(w)
            os.read(r2, 1)  # until the parent lets go
            os._exit(0)
        os.close(w)
        os.close(r2)
        out = json.loads(os.read(r, 4096).decode())
        os.close(r)
        self.addCleanup(lambda: (os.close(w2), os.waitpid(pid, 0)))
        return out

    def test_users_together_leave_the_daemon_a_reserve(self):
        import resource
        lower = self.make_dir("lower")
        spill = self.make_dir("spill")
        os.chmod(self.tmp, 0o755)
        os.chmod(lower, 0o755)
        files = {}
        for i in range(20):
            files["f%d.bin" % i] = et.det_bytes(3000 + i, i)
            et.write_file(os.path.join(lower, "f%d.bin" % i), files["f%d.bin" % i])
            os.chmod(os.path.join(lower, "f%d.bin" % i), 0o644)
        limit = self.LIMIT
        d = self.mount(lower, opts=["allow_other", "spill.path=" + spill,
                                    "limits.spill_files_per_user=300"],
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                             (limit, limit)))
        sp = d.path(".spill")
        self.assertEqual(self.hold(self.A, sp, 250), [250, 0])
        got = self.hold(self.B, sp, 300)
        # The daemon still loads uncached dataset files, for anyone.
        for name, data in files.items():
            self.assertEqual(et.read_file_raw(d.path(name)), data, name)
        self.assertEqual(got, [384 - 250, errno.ENFILE], "B: opened, first errno")
        self.assertEqual(et.as_user(self.A, self.A,
                                    lambda: et.read_file_raw(d.path("f3.bin"))), 0)
        self.assertTrue(d.alive())


class SpillPrivacyTest(et.MountTestCase):
    """A spill schedule acts only on its job owner's files: another user's
    file named in it is neither loaded, written out nor listed as resident,
    and the schedule itself is readable by its owner and root only."""

    ALICE, BOB = 23456, 23457

    def test_a_schedule_cannot_touch_or_show_another_users_files(self):
        lower = self.make_dir("lower")
        spill = self.make_dir("spill")
        os.chmod(self.tmp, 0o755)
        d = self.mount(lower, opts=["allow_other", "spill.path=" + spill, "spill.staging=64MiB"])
        sp = d.path(".spill")
        jobs = d.path(".epochfs", "jobs")
        data = et.det_bytes(600 * KiB, 5)

        def alice():
            with open(os.path.join(sp, "secret"), "wb") as f:
                f.write(data)
                os.fsync(f.fileno())
            os.mkdir(os.path.join(jobs, "alice"))
            with open(os.path.join(jobs, "alice", "spill_schedule"), "w") as f:
                f.write("secret\nsecret\n")
            with open(os.path.join(jobs, "alice", "progress"), "w") as f:
                f.write("0\n")
            with open(os.path.join(jobs, "alice", "status")) as f:
                return json.load(f)["spill"]["resident"]
        self.assertEqual(in_child_as(self.ALICE, alice), ["secret"])

        def bob():
            out = {}
            os.mkdir(os.path.join(jobs, "bob"))
            with open(os.path.join(jobs, "bob", "spill_schedule"), "w") as f:
                f.write("secret\nother\nsecret\n")
            for step in (0, 1, 2):
                with open(os.path.join(jobs, "bob", "progress"), "w") as f:
                    f.write("%d\n" % step)
            with open(os.path.join(jobs, "bob", "status")) as f:
                out["spill"] = json.load(f)["spill"]
            try:
                with open(os.path.join(jobs, "alice", "spill_schedule")) as f:
                    out["alice_schedule"] = f.read()
            except OSError as e:
                out["alice_schedule"] = e.errno
            return out
        out = in_child_as(self.BOB, bob)
        self.assertEqual(out["spill"]["resident"], [], out)
        self.assertEqual(out["spill"]["prefetches"], 0, out)
        self.assertEqual(out["spill"]["writeouts"], 0, out)
        self.assertEqual(out["alice_schedule"], errno.ENOENT, out)  # alice's job is invisible
        # Alice's file is as she left it, still resident by her schedule.
        def alice_again():
            with open(os.path.join(jobs, "alice", "status")) as f:
                res = json.load(f)["spill"]["resident"]
            with open(os.path.join(sp, "secret"), "rb") as f:
                return [res, f.read() == data]
        self.assertEqual(in_child_as(self.ALICE, alice_again), [["secret"], True])
        self.assertTrue(d.alive())

    def test_names_at_the_top_are_per_user(self):
        """Two users create the same name at the top of .spill/ with O_EXCL:
        both succeed (no EEXIST tells that the other has it), each reads back
        their own bytes through the same path, each one's schedule acts on
        their own file; root sees NAME@UID keys."""
        lower = self.make_dir("lower")
        spill = self.make_dir("spill")
        os.chmod(self.tmp, 0o755)
        d = self.mount(lower, opts=["allow_other", "spill.path=" + spill, "spill.staging=64MiB"])
        sp = d.path(".spill")
        jobs = d.path(".epochfs", "jobs")
        path = os.path.join(sp, "ckpt")

        def create(byte):
            def fn():
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
                os.write(fd, bytes([byte]) * (300 * KiB))
                os.fsync(fd)
                os.close(fd)
                os.mkdir(os.path.join(sp, "dir"))
                os.rename(path, os.path.join(sp, "dir", "c"))
                os.rename(os.path.join(sp, "dir", "c"), path)
                os.mkdir(os.path.join(jobs, "j"))
                with open(os.path.join(jobs, "j", "spill_schedule"), "w") as f:
                    f.write("ckpt\n")  # no progress: nothing moves it out of staging
                with open(os.path.join(jobs, "j", "spill_schedule")) as f:
                    sched = f.read()
                return [sorted(os.listdir(sp)), sched]
            return fn

        def read():
            with open(path, "rb") as f:
                data = f.read()
            with open(os.path.join(jobs, "j", "status")) as f:
                res = json.load(f)["spill"]["resident"]
            return [len(data), sorted(set(data)), res]

        self.assertEqual(in_child_as(self.ALICE, create(1)), [["ckpt", "dir"], "ckpt\n"])
        self.assertEqual(in_child_as(self.BOB, create(2)), [["ckpt", "dir"], "ckpt\n"])
        for _ in range(3):  # the same path in turn: each one's own file
            self.assertEqual(in_child_as(self.ALICE, read), [300 * KiB, [1], ["ckpt"]])
            self.assertEqual(in_child_as(self.BOB, read), [300 * KiB, [2], ["ckpt"]])
        self.assertEqual(sorted(os.listdir(sp)),
                         sorted("%s@%d" % (n, u) for n in ("ckpt", "dir")
                                for u in (self.ALICE, self.BOB)))
        self.assertFalse(os.path.exists(path))
        with open(os.path.join(sp, "ckpt@%d" % self.BOB), "rb") as f:
            self.assertEqual(f.read(1), b"\2")
        with open(os.path.join(jobs, "j@%d" % self.ALICE, "spill_schedule")) as f:
            self.assertEqual(f.read(), "ckpt\n")  # as its owner wrote it
        self.assertTrue(d.alive())


class OwnerReachTest(et.MountTestCase):
    """A job's samples are checked, and prefetched, as its owner reaches
    LOWER: a directory the owner may not search hides what is in it. Bob
    cannot list Alice's secret/ (0700): that it holds sub/, s0.bin and s1.bin
    must tell him nothing. Before, the daemon checked and loaded as root: a
    samples write naming secret/sub/ was accepted where one naming a missing
    directory failed, the files in secret/ were prefetched (stats `used` grew
    by their sizes) where missing ones were reported unreadable."""

    ALICE, BOB, CAROL = 23461, 23462, 23463
    GROUP = 23470

    def setUp(self):
        super().setUp()
        os.chmod(self.tmp, 0o755)
        self.lower = self.make_dir("lower")
        os.chmod(self.lower, 0o755)
        self.sizes = {}

        def put(rel, size, seed, owner=0, group=0, mode=0o644):
            path = os.path.join(self.lower, rel)
            et.write_file(path, et.det_bytes(size, seed))
            os.chown(path, owner, group)
            os.chmod(path, mode)
            self.sizes[rel] = size

        for i, rel in enumerate(["pub/p0.bin", "pub/p1.bin", "pub/q0.bin", "pub/q1.bin"]):
            put(rel, 40 * KiB + 7 * i, 10 + i)
        # Visible to Bob (pub/ is searchable), readable by Alice alone.
        put("pub/private.bin", 96 * KiB, 20, self.ALICE, self.ALICE, 0o600)
        # Alice's secret/: its files are readable, the directory not searchable.
        put("secret/s0.bin", 300 * KiB, 21, self.ALICE, self.ALICE)
        put("secret/s1.bin", 200 * KiB, 22, self.ALICE, self.ALICE)
        put("secret/sub/x.bin", 10 * KiB, 23, self.ALICE, self.ALICE)
        os.chown(os.path.join(self.lower, "secret", "sub"), self.ALICE, self.ALICE)
        os.chown(os.path.join(self.lower, "secret"), self.ALICE, self.ALICE)
        os.chmod(os.path.join(self.lower, "secret"), 0o700)
        # grp/: searchable by its group, of which Carol is a supplementary member.
        put("grp/g0.bin", 64 * KiB, 24, self.ALICE, self.GROUP, 0o640)
        os.chown(os.path.join(self.lower, "grp"), self.ALICE, self.GROUP)
        os.chmod(os.path.join(self.lower, "grp"), 0o750)
        self.d = self.mount(self.lower, opts=["allow_other", "cache.policy=future",
                                              "cache.prefetch=1", "cache.memory=64MiB"])
        self.jobs = self.d.path(".epochfs", "jobs")

    def declare(self, uid, name, samples, groups=()):
        """uid's job NAME over `samples`, its order 0 all of them in turn:
        the errno of the samples write, or 0."""
        jd = os.path.join(self.jobs, name)

        def fn():
            os.mkdir(jd)
            with open(os.path.join(jd, "config"), "w") as f:
                f.write("batch_size = 1\nepochs = 1\n")
            err = write_ctl(os.path.join(jd, "samples"), "".join(p + "\n" for p in samples).encode())
            if err == 0:
                with open(os.path.join(jd, "order", "0"), "w") as f:
                    f.write(" ".join(str(k) for k in range(len(samples))) + "\n")
                with open(os.path.join(jd, "epoch"), "w") as f:
                    f.write("0\n")
            return err
        return in_child_as(uid, fn, groups)

    def status(self, uid, name):
        with open(os.path.join(self.jobs, "%s@%d" % (name, uid), "status")) as f:
            return json.load(f)

    def test_a_directory_behind_one_the_owner_cannot_search_is_missing(self):
        # secret/sub exists, secrex/sub does not: to Bob both are missing,
        # in the same words.
        self.assertEqual(self.declare(self.BOB, "hid", ["pub/p0.bin", "secret/sub/x.bin"]),
                         errno.EINVAL)
        self.assertEqual(self.declare(self.BOB, "gone", ["pub/p0.bin", "secrex/sub/x.bin"]),
                         errno.EINVAL)
        hid = self.status(self.BOB, "hid")
        gone = self.status(self.BOB, "gone")
        self.assertIn("No such file or directory", gone["last_error"], gone)
        self.assertEqual(hid["last_error"].replace("secret", "secrex"), gone["last_error"])
        self.assertEqual((hid["samples"], hid["state"]), (gone["samples"], gone["state"]))
        # Alice, who may search it, declares it.
        self.assertEqual(self.declare(self.ALICE, "own", ["secret/sub/x.bin"]), 0)
        self.assertTrue(self.d.alive())

    def test_files_behind_a_directory_the_owner_cannot_search_are_never_loaded(self):
        # Bob's job "hid" names Alice's secret files and her private one; his
        # job "gone" names files that do not exist in their places. Both are
        # accepted, both prefetch their pub/ files alone, and report the rest
        # alike.
        hid = ["pub/p0.bin", "secret/s0.bin", "secret/s1.bin", "pub/private.bin", "pub/p1.bin"]
        gone = ["pub/q0.bin", "secret/n0.bin", "secret/n1.bin", "pub/nothere.bin", "pub/q1.bin"]
        self.assertEqual(self.declare(self.BOB, "hid", hid), 0)
        self.assertEqual(self.declare(self.BOB, "gone", gone), 0)
        pub = sum(self.sizes[p] for p in ["pub/p0.bin", "pub/p1.bin", "pub/q0.bin", "pub/q1.bin"])
        self.assertTrue(et.wait_for(
            lambda: (self.status(self.BOB, "hid")["unreadable_samples"],
                     self.status(self.BOB, "gone")["unreadable_samples"],
                     self.d.stats()["prefetched"]) == (3, 3, 4), WAIT),
            (self.status(self.BOB, "hid"), self.status(self.BOB, "gone"), self.d.stats()))
        st = self.d.stats()
        self.assertEqual(st["used"], pub, st)
        self.assertEqual(st["bytes_read_lower"], pub, st)
        self.assertEqual(st["objects"], 4, st)
        a, b = self.status(self.BOB, "hid"), self.status(self.BOB, "gone")
        renamed = (a["first_unreadable"].replace("s0.bin", "n0.bin").replace("s1.bin", "n1.bin")
                   .replace("private.bin", "nothere.bin"))
        self.assertEqual(renamed, b["first_unreadable"], (a, b))
        self.assertIn("No such file or directory", b["first_unreadable"], b)
        for k in ("state", "samples", "unreadable_samples", "last_error", "hits", "misses"):
            self.assertEqual(a[k], b[k], k)
        # Bob's own view of the mount's figures says the same.
        self.assertEqual(in_child_as(self.BOB, lambda: self.d.stats()["used"]), pub)
        # Nothing of secret/ is in the cache: Alice's read of it is a miss.
        hits, misses = st["hits"], st["misses"]
        data = in_child_as(self.ALICE, lambda: len(et.read_file_raw(
            self.d.path("secret", "s0.bin"))))
        self.assertEqual(data, self.sizes["secret/s0.bin"])
        st = self.d.stats()
        self.assertEqual((st["hits"], st["misses"]), (hits, misses + 1), st)
        self.assertTrue(self.d.alive())

    def test_files_behind_a_directory_the_owner_cannot_search_are_never_stat_ahead(self):
        # A budget for the four pub/ files and no more (a quarter of it holds
        # one): the names after them are stat'ed ahead rather than loaded. Bob's job
        # names Alice's secret files on one mount, missing files in their
        # places on another; pub/private.bin (which Bob sees) comes last, so
        # once it is stat'ed ahead the names before it have been passed. Had
        # the secret ones been stat'ed (as root), the daemon would remember
        # them: known_paths, which every user reads in stats, would tell
        # Bob that they exist.
        pub = ["pub/p0.bin", "pub/p1.bin", "pub/q0.bin", "pub/q1.bin"]
        known = []
        for hidden in (["secret/s0.bin", "secret/s1.bin"], ["secret/n0.bin", "secret/n1.bin"]):
            self.d = self.mount(self.lower, opts=["allow_other", "cache.policy=future",
                                                  "cache.prefetch=1", "cache.memory=%d" % (164 * KiB)])
            self.jobs = self.d.path(".epochfs", "jobs")
            self.assertEqual(self.declare(self.BOB, "b", pub + hidden + ["pub/private.bin"]), 0)

            def quiet():
                st = self.d.stats()
                return (st["prefetched"] >= 1 and st["stat_ahead"] >= 1
                        and st["lower_in_flight"] == 0)
            self.assertTrue(et.wait_for(quiet, WAIT), self.d.stats())
            st = self.d.stats()
            known.append((st["known_paths"], st["stat_ahead"]))
        self.assertEqual(known[0], known[1])
        self.assertTrue(self.d.alive())

    def test_a_supplementary_group_reaches_its_directory(self):
        # Carol may search grp/ by a supplementary group: her sample there is
        # prefetched; Bob's same sample is not.
        self.assertEqual(self.declare(self.BOB, "b", ["grp/g0.bin", "pub/p0.bin"]), 0)
        self.assertEqual(self.declare(self.CAROL, "c", ["grp/g0.bin"], groups=[self.GROUP]), 0)
        want = self.sizes["grp/g0.bin"] + self.sizes["pub/p0.bin"]
        self.assertTrue(et.wait_for(lambda: self.d.stats()["used"] == want, WAIT),
                        self.d.stats())
        self.assertEqual(self.status(self.CAROL, "c")["unreadable_samples"], 0)
        self.assertTrue(et.wait_for(
            lambda: self.status(self.BOB, "b")["unreadable_samples"] == 1, WAIT),
            self.status(self.BOB, "b"))
        self.assertEqual(self.d.stats()["prefetched"], 2)
        self.assertTrue(self.d.alive())


if __name__ == "__main__":
    et.main()
