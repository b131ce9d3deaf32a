"""The writable spill area MOUNTPOINT/.spill/ (seeds 001, 002) on a real mount.

- an fsx-style random workload (writes, reads, truncates, renames, fsyncs at
  random offsets and lengths, sparse and zero-heavy data) compared with an
  in-memory reference after every step; the same with concurrent writer
  processes on different files;
- the rest of the mount stays read-only; names, directories, rename, unlink;
- each user's files are private (a forked process with another uid);
- the quota gives ENOSPC and loses nothing;
- seed 001's scheduler: after `progress` k, the files of steps
  k+1..k+num_prefetch are RAM-resident and those outside the write-out window
  are not, read from the job's status, with files written by a real process;
- crash: fsync, SIGKILL the daemon, mount again: the bytes are there;
- a written chunk whose slot was zeroed on the SSD, or cut off by a truncated
  backing file, fails read(2) with EIO (a hole still reads as zeros).
"""

import errno
import hashlib
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402

MiB = 1 << 20
CHUNK = 256 << 10  # the store's chunk (for boundary-crossing offsets)


def pattern(rng, n):
    """Data like activations: runs of zero words and of random words."""
    out = bytearray()
    while len(out) < n:
        run = rng.randrange(1, 4096)
        if rng.random() < 0.5:
            out += bytes(run * 4)
        else:
            out += rng.randbytes(run * 4)
    return bytes(out[:n])


class Fsx:
    """One file's random workload, checked against a bytearray after each step."""

    def __init__(self, test, root, name, seed, max_size=3 * MiB):
        self.t = test
        self.root = root
        self.name = name
        self.rng = random.Random(seed)
        self.ref = bytearray()
        self.max = max_size
        self.path = os.path.join(root, name)
        with open(self.path, "wb"):
            pass

    def offset(self):
        # Half the offsets sit right around a chunk boundary.
        if self.rng.random() < 0.5:
            k = self.rng.randrange(0, self.max // CHUNK + 1)
            return max(0, k * CHUNK + self.rng.randrange(-9, 10))
        return self.rng.randrange(0, self.max)

    def check(self, what):
        st = os.stat(self.path)
        self.t.assertEqual(st.st_size, len(self.ref), "%s: size after %s" % (self.name, what))
        with open(self.path, "rb") as f:
            got = f.read()
        if got != bytes(self.ref):
            bad = next(i for i in range(min(len(got), len(self.ref)))
                       if got[i] != self.ref[i]) if len(got) == len(self.ref) else -1
            self.t.fail("%s: bytes differ after %s (first at %d)" % (self.name, what, bad))

    def step(self):
        op = self.rng.choices(["write", "read", "truncate", "rename", "fsync"],
                              [50, 25, 10, 8, 7])[0]
        if op == "write":
            off = self.offset()
            n = self.rng.choice([1, 7, 4096, CHUNK, self.rng.randrange(1, 700 << 10)])
            n = min(n, self.max - off) if off < self.max else 1
            data = pattern(self.rng, n) if self.rng.random() < 0.7 else self.rng.randbytes(n)
            fd = os.open(self.path, os.O_WRONLY)
            try:
                self.t.assertEqual(os.pwrite(fd, data, off), n)
            finally:
                os.close(fd)
            if off > len(self.ref):
                self.ref += bytes(off - len(self.ref))
            end = off + n
            if end > len(self.ref):
                self.ref += bytes(end - len(self.ref))
            self.ref[off:end] = data
            what = "write %d@%d" % (n, off)
        elif op == "read":
            off = self.offset()
            n = self.rng.randrange(1, 600 << 10)
            fd = os.open(self.path, os.O_RDONLY)
            try:
                got = os.pread(fd, n, off)
            finally:
                os.close(fd)
            self.t.assertEqual(got, bytes(self.ref[off:off + n]),
                               "%s: read %d@%d" % (self.name, n, off))
            return
        elif op == "truncate":
            size = self.rng.choice([0, self.offset(), len(self.ref) // 2, len(self.ref) + 5000])
            os.truncate(self.path, size)
            if size < len(self.ref):
                del self.ref[size:]
            else:
                self.ref += bytes(size - len(self.ref))
            what = "truncate %d" % size
        elif op == "rename":
            new = self.name + ".r" if not self.name.endswith(".r") else self.name[:-2]
            newpath = os.path.join(self.root, new)
            os.rename(self.path, newpath)
            self.t.assertFalse(os.path.exists(self.path))
            self.name, self.path = new, newpath
            what = "rename"
        else:
            fd = os.open(self.path, os.O_RDWR)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            what = "fsync"
        self.check(what)


def fsx_child(root, name, seed, steps):
    """A writer process of its own: exits 0 when every step matched."""
    import unittest

    class T(unittest.TestCase):
        def runTest(self):
            f = Fsx(self, root, name, seed)
            for _ in range(steps):
                f.step()

    r = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(T())
    os._exit(0 if r.wasSuccessful() else 1)


class SpillTestCase(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        et.write_file(os.path.join(self.lower, "sample.bin"), et.det_bytes(10000, 1))
        # On the real disk, not tmpfs: the store uses O_DIRECT.
        self.ssd = os.path.join(self.tmp, "ssd")

    def mount_spill(self, *extra_opts, mnt=None):
        opts = ["spill.path=" + self.ssd, "spill.staging=8MiB"] + list(extra_opts)
        return self.mount(self.lower, mnt=mnt, opts=opts)

    def status(self, d, job):
        with open(d.path(".epochfs", "jobs", job, "status")) as f:
            return json.load(f)


class BasicsTest(SpillTestCase):
    def test_area_is_writable_and_the_rest_read_only(self):
        d = self.mount_spill()
        sp = d.path(".spill")
        st = os.stat(sp)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o1777)
        self.assertIn(".spill", os.listdir(d.mnt))
        data = et.det_bytes(3 * MiB + 123, 7)
        et.write_file(os.path.join(sp, "act0"), data)
        self.assertEqual(et.read_file(os.path.join(sp, "act0")), data)
        self.assertEqual(os.stat(os.path.join(sp, "act0")).st_size, len(data))
        os.mkdir(os.path.join(sp, "run1"))
        et.write_file(os.path.join(sp, "run1", "p.bin"), b"x" * 5)
        os.rename(os.path.join(sp, "run1"), os.path.join(sp, "run2"))
        self.assertEqual(et.read_file(os.path.join(sp, "run2", "p.bin")), b"x" * 5)
        self.assertEqual(sorted(os.listdir(sp)), ["act0", "run2"])
        with self.assertRaises(OSError) as cm:
            os.rmdir(os.path.join(sp, "run2"))
        self.assertEqual(cm.exception.errno, errno.ENOTEMPTY)
        os.unlink(os.path.join(sp, "run2", "p.bin"))
        os.rmdir(os.path.join(sp, "run2"))
        # The dataset view stays read-only.
        for fn in (lambda: et.write_file(d.path("new"), b"x"),
                   lambda: os.mkdir(d.path("dir")),
                   lambda: os.unlink(d.path("sample.bin"))):
            with self.assertRaises(OSError) as cm:
                fn()
            self.assertEqual(cm.exception.errno, errno.EROFS)
        with self.assertRaises(OSError) as cm:
            os.rename(os.path.join(sp, "act0"), d.path("act0"))
        self.assertIn(cm.exception.errno, (errno.EXDEV, errno.EROFS))
        # What the stats say of the tier.
        tier = d.stats()["tiers"]["spill"]
        self.assertEqual(tier["files"], 1)
        self.assertEqual(tier["logical_bytes"], len(data))
        self.assertEqual(d.unmount(), 0)
        # A clean unmount writes everything back: a new mount sees the file.
        d2 = self.mount_spill()
        self.assertEqual(et.read_file(d2.path(".spill", "act0")), data)

    def test_append_and_zero_heavy_data(self):
        d = self.mount_spill()
        p = d.path(".spill", "log")
        ref = b""
        for i in range(20):
            chunk = bytes(70000) + et.det_bytes(1000 + i, i)
            with open(p, "ab") as f:
                f.write(chunk)
            ref += chunk
        self.assertEqual(et.read_file(p), ref)
        tier = d.stats()["tiers"]["spill"]
        self.assertEqual(tier["logical_bytes"], len(ref))

    def test_quota_gives_enospc_and_loses_nothing(self):
        d = self.mount_spill("spill.max_bytes=4MiB")
        p = d.path(".spill", "a")
        et.write_file(p, et.det_bytes(3 * MiB, 3))
        with self.assertRaises(OSError) as cm:
            with open(d.path(".spill", "b"), "wb") as f:
                f.write(et.det_bytes(2 * MiB, 4))
                f.flush()
        self.assertEqual(cm.exception.errno, errno.ENOSPC)
        self.assertEqual(et.read_file(p), et.det_bytes(3 * MiB, 3))
        # What was accepted before the refusal is whole; nothing past the quota.
        b = et.read_file(d.path(".spill", "b"))
        self.assertLessEqual(len(b), 1 * MiB)
        self.assertEqual(b, et.det_bytes(2 * MiB, 4)[:len(b)])
        self.assertLessEqual(d.stats()["tiers"]["spill"]["logical_bytes"], 4 * MiB)
        os.unlink(p)
        os.unlink(d.path(".spill", "b"))
        et.write_file(d.path(".spill", "c"), et.det_bytes(4 * MiB, 5))
        self.assertEqual(et.read_file(d.path(".spill", "c")), et.det_bytes(4 * MiB, 5))

    def test_files_are_private_to_their_owner(self):
        os.chmod(self.tmp, 0o755)  # let another user reach the mount point
        d = self.mount_spill("fuse.allow_other=true")
        secret = d.path(".spill", "secret")
        et.write_file(secret, b"root's")
        os.chmod(secret, 0o644)  # group/other bits are not kept
        self.assertEqual(stat.S_IMODE(os.stat(secret).st_mode), 0o600)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            res = {}
            for name, fn in [
                ("read", lambda: open(secret, "rb").read()),
                ("write", lambda: open(secret, "r+b").write(b"x")),
                ("unlink", lambda: os.unlink(secret)),
            ]:
                try:
                    fn()
                    res[name] = 0
                except OSError as e:
                    res[name] = e.errno
            try:
                mine = os.path.join(d.mnt, ".spill", "nobody")
                with open(mine, "wb") as f:
                    f.write(b"mine")
                with open(mine, "rb") as f:
                    res["own"] = f.read().decode()
                res["listing"] = sorted(os.listdir(os.path.join(d.mnt, ".spill")))
            except OSError as e:
                res["own"] = "errno %d" % e.errno
            os.write(w, json.dumps(res).encode())
            os._exit(0)
        os.close(w)
        out = b""
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            out += b
        os.close(r)
        os.waitpid(pid, 0)
        res = json.loads(out)
        self.assertIn(res["read"], (errno.EACCES, errno.ENOENT, errno.EPERM), res)
        self.assertIn(res["write"], (errno.EACCES, errno.ENOENT, errno.EPERM), res)
        self.assertIn(res["unlink"], (errno.EACCES, errno.ENOENT, errno.EPERM), res)
        self.assertEqual(res["own"], "mine")
        self.assertEqual(res["listing"], ["nobody"])  # root's file is not listed
        self.assertEqual(et.read_file(secret), b"root's")
        # Names at the top are per user: root reaches nobody's file by its key.
        self.assertEqual(os.stat(d.path(".spill", "nobody@65534")).st_uid, 65534)
        self.assertFalse(os.path.exists(d.path(".spill", "nobody")))
        self.assertEqual(sorted(os.listdir(d.path(".spill"))), ["nobody@65534", "secret"])

    def test_bad_spill_path_fails_the_mount(self):
        bad = os.path.join(self.tmp, "file-not-dir")
        et.write_file(bad, b"x")
        mnt = self.make_mountpoint()
        r = subprocess.run(self.epochfs_cmd(self.lower, mnt, ["spill.path=" + bad]),
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("spill.path", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertFalse(et.is_mounted(mnt))


class FsxTest(SpillTestCase):
    def test_random_workload_matches_a_reference(self):
        d = self.mount_spill()
        sp = d.path(".spill")
        files = [Fsx(self, sp, "f%d" % i, seed=100 + i) for i in range(3)]
        rng = random.Random(5)
        for _ in range(300):
            rng.choice(files).step()
        for f in files:
            f.check("the end")
        self.assertEqual(d.stats()["tiers"]["spill"]["checksum_errors"], 0)
        # And after a remount (everything written back, read from the SSD).
        self.assertEqual(d.unmount(), 0)
        d2 = self.mount_spill()
        for f in files:
            self.assertEqual(et.read_file(d2.path(".spill", f.name)), bytes(f.ref))

    def test_concurrent_writers_on_different_files(self):
        d = self.mount_spill()
        sp = d.path(".spill")
        pids = []
        for i in range(4):
            pid = os.fork()
            if pid == 0:
                fsx_child(sp, "w%d" % i, 200 + i, 120)
            pids.append(pid)
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0, "a writer saw wrong bytes")
        self.assertEqual(d.stats()["tiers"]["spill"]["checksum_errors"], 0)


class CrashTest(SpillTestCase):
    def test_fsynced_file_survives_sigkill(self):
        d = self.mount_spill("auto_unmount")
        data = pattern(random.Random(9), 5 * MiB + 17)
        p = d.path(".spill", "ckpt")
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o600)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(timeout=10)
        et.wait_for(lambda: not et.is_mounted(d.mnt), 10)
        et.force_unmount(d.mnt)
        d2 = self.mount_spill(mnt=d.mnt)
        self.assertEqual(os.stat(d2.path(".spill", "ckpt")).st_size, len(data))
        self.assertEqual(hashlib.sha256(et.read_file(d2.path(".spill", "ckpt"))).hexdigest(),
                         hashlib.sha256(data).hexdigest())


class LostSlotTest(SpillTestCase):
    def test_a_written_slot_lost_on_disk_fails_with_eio(self):
        """A chunk slot that was written, then zeroed on the SSD or cut off by a
        truncated backing file, is EIO on read(2), never zeros; a hole still
        reads as zeros. (Before, both lost chunks read back as zeros.)"""
        d = self.mount_spill()
        c0, c2, c3 = (et.det_bytes(CHUNK, seed) for seed in (21, 22, 23))
        fd = os.open(d.path(".spill", "lost"), os.O_CREAT | os.O_WRONLY, 0o600)
        os.pwrite(fd, c0, 0)  # chunk 1 stays a hole
        os.pwrite(fd, c2, 2 * CHUNK)
        os.pwrite(fd, c3, 3 * CHUNK)
        os.fsync(fd)
        os.close(fd)
        self.assertEqual(d.unmount(), 0)

        # The backing file's slots (docs/spill.md, "On-disk format").
        backing = os.path.join(self.ssd, "lost")
        self.assertTrue(os.path.isfile(backing))

        def slot(c):
            return 4096 + c * (4096 + CHUNK)

        with open(backing, "r+b") as f:
            f.seek(slot(2))
            f.write(bytes(4096 + CHUNK))  # chunk 2: header block and bytes zeroed
            f.truncate(slot(3))           # chunk 3: cut off
        d2 = self.mount_spill()
        fd = os.open(d2.path(".spill", "lost"), os.O_RDONLY)
        try:
            self.assertEqual(os.fstat(fd).st_size, 4 * CHUNK)
            self.assertEqual(os.pread(fd, CHUNK, 0), c0)
            self.assertEqual(os.pread(fd, CHUNK, CHUNK), bytes(CHUNK))
            for c in (2, 3):
                with self.assertRaises(OSError, msg="chunk %d read as a hole" % c) as cm:
                    os.pread(fd, CHUNK, c * CHUNK)
                self.assertEqual(cm.exception.errno, errno.EIO)
        finally:
            os.close(fd)
        self.assertGreaterEqual(d2.stats()["tiers"]["spill"]["checksum_errors"], 2)


class ScheduleTest(SpillTestCase):
    def test_prefetch_and_writeout_follow_progress(self):
        # 6 layers of 2 MiB; staging 64 MiB holds all; windows of 2.
        d = self.mount_spill("spill.staging=64MiB", "spill.num_prefetch=2",
                             "spill.num_writeout=2")
        jobs = d.path(".epochfs", "jobs")
        os.mkdir(os.path.join(jobs, "net"))
        layers = ["act/l%d" % i for i in range(6)]
        # A real process writes the layer files (forward pass), then exits.
        script = (
            "import os, sys\n"
            "root = sys.argv[1]\n"
            "os.makedirs(os.path.join(root, 'act'), exist_ok=True)\n"
            "for i in range(6):\n"
            "    with open(os.path.join(root, 'act', 'l%d' % i), 'wb') as f:\n"
            "        f.write(bytes([i + 1]) * (2 << 20))\n"
        )
        subprocess.run([sys.executable, "-c", script, d.path(".spill")], check=True)
        schedule = layers + list(reversed(layers))  # forward then backward
        with open(os.path.join(jobs, "net", "spill_schedule"), "w") as f:
            f.write("\n".join(schedule) + "\n")
        with open(os.path.join(jobs, "net", "spill_schedule")) as f:
            self.assertEqual(f.read(), "\n".join(schedule) + "\n")

        def report(k):
            with open(os.path.join(jobs, "net", "progress"), "w") as f:
                f.write("%d\n" % k)

        def settled(n):
            def ok():
                sp = self.status(d, "net")["spill"]
                return sp["applied"] >= n
            et.wait_for(ok, 20)
            return self.status(d, "net")["spill"]

        for n, k in enumerate([1, 3, 6, 9], start=1):
            report(k)
            sp = settled(n)
            self.assertEqual(sp["progress"], k)
            want_in = {schedule[(k + i) % len(schedule)] for i in (1, 2)}
            window = {schedule[(k + i) % len(schedule)] for i in (1, 2)}
            want_out = set(layers) - window
            resident = set(sp["resident"])
            self.assertTrue(want_in <= resident, "after %d: %s not all in %s" % (k, want_in, resident))
            self.assertFalse(resident & want_out, "after %d: %s should be out" % (k, resident & want_out))
        # Bytes are right whatever the residency.
        for i, name in enumerate(layers):
            self.assertEqual(et.read_file(d.path(".spill", name)), bytes([i + 1]) * (2 << 20))
        # A bad report is refused with the reason in status.
        with self.assertRaises(OSError) as cm:
            report(len(schedule))
        self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertIn("progress:", self.status(d, "net")["last_error"])
        os.rmdir(os.path.join(jobs, "net"))


if __name__ == "__main__":
    et.main()
