#!/usr/bin/python3
"""The disk tier (cache.disk_path, docs/disk_tier.md) on a real mount.

A dataset larger than the RAM budget, read twice: the second epoch comes from
the disk tier, byte-exact, and LOWER is not read again. Bytes flipped in the
tier's files are never served (counted as checksum errors, read again from
LOWER). A SIGKILLed daemon, remounted, serves from the disk tier warm. A LOWER
file changed while nothing was mounted is served fresh, even one replaced with
the same size and mtime (its ctime tells); so is one changed
while mounted under consistency = "open" (the old disk copy dropped). A second daemon on the
same directory is refused; a missing directory fails the mount naming it.
"""

import glob
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402

FILES = 40
SIZE = 256 * 1024  # 10 MiB in all, the RAM budget 2 MiB


class DiskTierTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower, self.want = self.dataset([SIZE] * FILES, seed=7)
        self.disk = self.make_dir("disk")

    def opts(self, disk=None):
        # No kernel page cache: every read reaches the daemon, each open is
        # one access (one Get), so the counts below are exact.
        return ["cache.memory=2MiB", "cache.disk_path=" + (disk or self.disk),
                "cache.disk_size=64MiB", "fuse.kernel_cache=false"]

    def read_all(self, d):
        """Reads every file once; returns the number of wrong files."""
        wrong = 0
        for name in sorted(self.want):
            if et.read_file(d.path(name)) != self.want[name]:
                wrong += 1
        return wrong

    def wait_written(self, d, n=FILES):
        ok = et.wait_for(lambda: d.stats()["tiers"]["disk"]["objects"] >= n, 30 * et.TIME_SCALE)
        self.assertTrue(ok, d.stats()["tiers"]["disk"])

    def data_files(self):
        return sorted(glob.glob(os.path.join(self.disk, "data", "*", "*")))

    def test_second_epoch_from_disk(self):
        d = self.mount(self.lower, opts=self.opts())
        self.assertEqual(self.read_all(d), 0)
        self.wait_written(d)
        st1 = d.stats()
        disk = st1["tiers"]["disk"]
        self.assertEqual(disk["state"], "ok")
        self.assertEqual(disk["objects"], FILES)
        self.assertEqual(disk["bytes"], FILES * SIZE)
        self.assertEqual(disk["writes"], FILES)
        self.assertGreaterEqual(disk["writes_bytes"], FILES * SIZE)
        self.assertLessEqual(st1["used"], 2 << 20)
        self.assertEqual(self.read_all(d), 0)
        st2 = d.stats()
        # RAM holds at most 8 of the 40 files: the rest came from the disk.
        hits = st2["tiers"]["disk"]["hits"] - disk["hits"]
        self.assertGreaterEqual(hits, FILES - 8)
        self.assertEqual(st2["bytes_read_lower"], st1["bytes_read_lower"])
        self.assertGreaterEqual(st2["tiers"]["disk"]["reads_bytes"] - disk["reads_bytes"],
                                hits * SIZE)
        self.assertEqual(st2["tiers"]["disk"]["checksum_errors"], 0)
        # The directory is the daemon's alone.
        self.assertEqual(os.stat(os.path.join(self.disk, "data")).st_mode & 0o777, 0o700)
        for f in self.data_files()[:5] + [os.path.join(self.disk, "index")]:
            self.assertEqual(os.stat(f).st_mode & 0o777, 0o600, f)
        self.assertEqual(d.unmount(), 0)

    def test_warm_fills_the_disk_tier_and_says_where_the_bytes_went(self):
        d = self.mount(self.lower, opts=self.opts())
        r = subprocess.run([et.epochfs_bin(), "warm", "-q", d.mnt], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        # 10 MiB fit RAM (2 MiB) and the disk tier (64 MiB): no warning.
        self.assertNotIn("only part will stay cached", r.stderr)
        # warm waited for the tier's queued writes: every file is on disk.
        st = d.stats()
        disk = st["tiers"]["disk"]
        self.assertEqual(disk["objects"], FILES)
        self.assertEqual(disk["queued_bytes"], 0)
        m = re.search(r"warm: cached now: RAM (.+) \((\d+)\), kernel page cache (.+) \((\d+)\), "
                      r"disk tier (.+) \((\d+)\) of (.+)\n", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertEqual(int(m.group(2)), st["tiers"]["ram"]["objects"])
        self.assertGreater(int(m.group(2)), 0)
        self.assertEqual((m.group(5), int(m.group(6)), m.group(7)), ("10.0 MiB", FILES, "64.0 MiB"))
        # The epoch after it costs LOWER nothing.
        lower0 = st["bytes_read_lower"]
        self.assertEqual(self.read_all(d), 0)
        self.assertEqual(d.stats()["bytes_read_lower"], lower0)
        self.assertEqual(d.unmount(), 0)

    def test_flipped_bytes_are_never_served(self):
        d = self.mount(self.lower, opts=self.opts())
        self.assertEqual(self.read_all(d), 0)
        self.wait_written(d)
        self.assertEqual(d.unmount(), 0)
        files = self.data_files()
        self.assertEqual(len(files), FILES)
        for f in files:  # one byte in the middle of each copy's data
            with open(f, "r+b") as fh:
                fh.seek(os.path.getsize(f) // 2)
                b = fh.read(1)
                fh.seek(-1, os.SEEK_CUR)
                fh.write(bytes([b[0] ^ 0x5A]))
        d = self.mount(self.lower, opts=self.opts())
        self.assertEqual(self.read_all(d), 0)
        st = d.stats()
        self.assertEqual(st["tiers"]["disk"]["checksum_errors"], FILES)
        self.assertEqual(st["tiers"]["disk"]["hits"], 0)
        self.assertEqual(st["bytes_read_lower"], FILES * SIZE)
        # Read again from LOWER, they are written anew: the third epoch's
        # bytes come from the disk, exact.
        self.wait_written(d)
        self.assertEqual(self.read_all(d), 0)
        self.assertGreaterEqual(d.stats()["tiers"]["disk"]["hits"], FILES - 8)
        self.assertEqual(d.unmount(), 0)

    def test_sigkill_then_remount_is_warm(self):
        d = self.mount(self.lower, opts=self.opts())
        self.assertEqual(self.read_all(d), 0)
        self.wait_written(d)
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait(timeout=et.EXIT_TIMEOUT)
        et.force_unmount(d.mnt)
        d2 = self.mount(self.lower, mnt=d.mnt, opts=self.opts())
        self.assertEqual(d2.stats()["tiers"]["disk"]["objects"], FILES)
        self.assertEqual(self.read_all(d2), 0)
        st = d2.stats()
        self.assertEqual(st["tiers"]["disk"]["hits"], FILES)
        self.assertEqual(st["bytes_read_lower"], 0)
        self.assertEqual(st["tiers"]["disk"]["checksum_errors"], 0)
        self.assertEqual(d2.unmount(), 0)

    def test_lower_changed_while_unmounted_is_served_fresh(self):
        d = self.mount(self.lower, opts=self.opts())
        self.assertEqual(self.read_all(d), 0)
        self.wait_written(d)
        self.assertEqual(d.unmount(), 0)
        # Same size, other bytes and another mtime; and one of another size.
        changed = sorted(self.want)[3]
        self.want[changed] = et.det_bytes(SIZE, 99)
        path = os.path.join(self.lower, changed)
        st = os.stat(path)
        et.write_file(path, self.want[changed])
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        grown = sorted(self.want)[5]
        self.want[grown] = et.det_bytes(SIZE + 4096, 98)
        et.write_file(os.path.join(self.lower, grown), self.want[grown])
        d = self.mount(self.lower, opts=self.opts())
        self.assertEqual(self.read_all(d), 0)
        st = d.stats()
        self.assertEqual(st["tiers"]["disk"]["stale"], 2)
        self.assertEqual(st["tiers"]["disk"]["hits"], FILES - 2)
        self.assertEqual(st["bytes_read_lower"], 2 * SIZE + 4096)
        self.assertEqual(d.unmount(), 0)

    def test_same_size_and_mtime_replaced_while_unmounted_is_served_fresh(self):
        # Other bytes of the same size, the mtime set back to the old one to
        # the nanosecond: rewritten in place (`touch -r`), and a copy renamed
        # over the file (`cp -p`, `rsync -t`). Only the ctime (and, for the
        # copy, the inode number) tells them from the files the tier copied.
        d = self.mount(self.lower, opts=self.opts())
        self.assertEqual(self.read_all(d), 0)
        self.wait_written(d)
        self.assertEqual(d.unmount(), 0)
        in_place, renamed = sorted(self.want)[2], sorted(self.want)[6]
        for name, seed in ((in_place, 95), (renamed, 94)):
            path = os.path.join(self.lower, name)
            st = os.stat(path)
            new = et.det_bytes(SIZE, seed)
            self.assertNotEqual(new, self.want[name])
            self.want[name] = new
            target = path if name == in_place else path + ".new"
            et.write_file(target, new)
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
            if target != path:
                os.rename(target, path)
            after = os.stat(path)
            self.assertEqual((after.st_size, after.st_mtime_ns), (st.st_size, st.st_mtime_ns))
        d = self.mount(self.lower, opts=self.opts())
        self.assertEqual(d.stats()["tiers"]["disk"]["objects"], FILES)
        self.assertEqual(self.read_all(d), 0)
        st = d.stats()
        # Both old copies dropped (counted), their bytes read from LOWER; the
        # other files from the disk.
        self.assertEqual(st["tiers"]["disk"]["stale"], 2)
        self.assertEqual(st["tiers"]["disk"]["hits"], FILES - 2)
        self.assertEqual(st["bytes_read_lower"], 2 * SIZE)
        self.assertEqual(st["tiers"]["disk"]["checksum_errors"], 0)
        self.assertEqual(d.unmount(), 0)

    def test_open_consistency_never_serves_the_old_disk_copy(self):
        # consistency = "open": an open whose bytes are on disk, not in RAM,
        # is checked against LOWER's file as it is now, not as it was when
        # the copy was written.
        d = self.mount(self.lower, opts=self.opts() + ["cache.consistency=open"])
        self.assertEqual(self.read_all(d), 0)
        self.wait_written(d)
        # The first file read is long gone from RAM (2 MiB hold at most 8 of
        # the 40): its bytes are on disk only. Same size, other bytes and
        # another mtime (1 ns later), while mounted.
        changed = sorted(self.want)[0]
        old = self.want[changed]
        self.want[changed] = et.det_bytes(SIZE, 97)
        self.assertNotEqual(old, self.want[changed])
        path = os.path.join(self.lower, changed)
        st = os.stat(path)
        et.write_file(path, self.want[changed])
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        st0 = d.stats()
        self.assertEqual(st0["tiers"]["disk"]["stale"], 0)
        self.assertEqual(et.read_file(d.path(changed)), self.want[changed])
        st1 = d.stats()
        # The stale copy was dropped (counted), the bytes came from LOWER.
        self.assertEqual(st1["tiers"]["disk"]["stale"], 1)
        self.assertEqual(st1["tiers"]["disk"]["hits"], st0["tiers"]["disk"]["hits"])
        self.assertEqual(st1["bytes_read_lower"] - st0["bytes_read_lower"], SIZE)
        # Unchanged files still come from the disk; every file is exact.
        self.assertEqual(self.read_all(d), 0)
        st2 = d.stats()
        self.assertGreaterEqual(st2["tiers"]["disk"]["hits"] - st1["tiers"]["disk"]["hits"],
                                FILES - 9)
        self.assertEqual(st2["tiers"]["disk"]["stale"], 1)
        self.assertEqual(d.unmount(), 0)

    def test_second_daemon_on_the_directory_is_refused(self):
        d = self.mount(self.lower, opts=self.opts())
        mnt2 = self.make_mountpoint("mnt2")
        r = subprocess.run(self.epochfs_cmd(self.lower, mnt2, self.opts()),
                           capture_output=True, text=True, timeout=et.EXIT_TIMEOUT)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("in use by another epochfs daemon (pid %d)" % d.proc.pid, r.stderr)
        self.assertIn(self.disk, r.stderr)
        self.assertFalse(et.is_mounted(mnt2))
        self.assertEqual(self.read_all(d), 0)
        self.assertEqual(d.unmount(), 0)

    def test_missing_directory_fails_naming_it(self):
        missing = os.path.join(self.tmp, "no-such-dir")
        mnt = self.make_mountpoint()
        r = subprocess.run(self.epochfs_cmd(self.lower, mnt, self.opts(missing)),
                           capture_output=True, text=True, timeout=et.EXIT_TIMEOUT)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cache.disk_path " + missing, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    et.main()
