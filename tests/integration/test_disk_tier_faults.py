#!/usr/bin/python3
"""The disk tier's faults on a real mount (docs/disk_tier.md, Faults): none
fails a read.

- ENOSPC: the cache directory on a small tmpfs, filled behind the tier's back
  by another file: the tier shows `full`, its "auto" size shrinks, it evicts
  (the filesystem's free space comes back) and every read stays byte-exact;
  room made again, it is `ok` and admits again.
- I/O errors: the cache directory on the faultfs fixture (writable), failed on
  command (.fail_all): the tier is `failed`, every read byte-exact from RAM or
  LOWER, a warning in stats, the metric, `epochfs top` and the log.
- A disk that stops answering (.hang_all): reads go on from LOWER within the
  tier's own bound (cache.disk_timeout, far below lower.timeout), the tier is
  `failed`, the daemon unmounts.
- A disk that does not answer at start (.hang_all before the mount): the
  mount comes up within cache.disk_timeout, RAM-only, the tier `failed` with
  a warning; reads exact from LOWER; once the disk answers, what the start
  opened is closed and the tier stays failed until the next mount.
- A cache directory that is not writable at start: one line naming it.
- Readers side by side across block boundaries of a big file served from the
  tier: byte-exact.
"""

import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
FILES = 40
SIZE = 256 * KiB  # 10 MiB in all, the RAM budget 2 MiB


class DiskTierFaultsTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower, self.want = self.dataset([SIZE] * FILES, seed=11)

    def read_all(self, d):
        """Reads every file once; returns the number of wrong files."""
        wrong = 0
        for name in sorted(self.want):
            if et.read_file(d.path(name)) != self.want[name]:
                wrong += 1
        return wrong

    def disk(self, d):
        return d.stats()["tiers"]["disk"]

    def wait_idle(self, d, n):
        """Waits until the tier holds n objects."""
        ok = et.wait_for(lambda: self.disk(d)["objects"] >= n, 30 * et.TIME_SCALE)
        self.assertTrue(ok, self.disk(d))

    def mount_tmpfs(self, name, opts):
        p = self.make_dir(name)
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", p], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", p])
        return p

    def writable_faultfs(self):
        """A cache directory on the faultfs fixture; returns (source, dir)."""
        src = self.make_dir("disksrc")
        et.write_file(os.path.join(src, ".writable"), b"")
        os.makedirs(os.path.join(src, "cache"))
        mnt = self.mount_faultfs(src)
        self.addCleanup(lambda: [os.path.exists(os.path.join(src, f)) and
                                 os.unlink(os.path.join(src, f))
                                 for f in (".hang_all", ".fail_all")])
        return src, os.path.join(mnt, "cache")

    @staticmethod
    def free_bytes(path):
        v = os.statvfs(path)
        return v.f_bavail * v.f_frsize

    def test_enospc_full_evicts_and_reads_stay_exact(self):
        small = self.mount_tmpfs("small", "size=8m,mode=0700")
        d = self.mount(self.lower, opts=[
            "cache.memory=2MiB", "cache.disk_path=" + small, "cache.disk_size=auto",
            "cache.disk_margin=1MiB", "fuse.kernel_cache=false"])
        b0 = self.disk(d)["budget"]
        self.assertGreater(b0, 5 * MiB)
        self.assertLessEqual(b0, 7 * MiB)
        self.assertEqual(self.read_all(d), 0)
        held = 5 * MiB // SIZE
        self.wait_idle(d, held)
        st = self.disk(d)
        self.assertEqual(st["state"], "ok")
        self.assertLessEqual(st["bytes"], st["budget"])
        # Another file takes every free byte of the filesystem: the tier's
        # idea of its free space is wrong now.
        filler = os.path.join(small, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\xee" * (64 * KiB))
                    f.flush()
            except OSError:
                pass
        self.assertLess(self.free_bytes(small), 64 * KiB)
        # Reads go on, exact; the tier's writes meet ENOSPC (or its re-check
        # finds no room): it is full, its size shrinks and it evicts.
        for _ in range(3):
            self.assertEqual(self.read_all(d), 0)
        st = self.disk(d)
        self.assertEqual(st["state"], "full", st)
        self.assertLess(st["budget"], b0)
        self.assertLessEqual(st["bytes"], st["budget"])
        self.assertIn("the disk tier's filesystem is full: it admits less and evicts",
                      d.stats()["warnings"])
        self.assertRegex(d.stderr_text(), "disk tier %s: (no space left|its filesystem is below)"
                         % re.escape(small))
        # Eviction freed disk space: at least what the margin keeps free.
        et.wait_for(lambda: self.free_bytes(small) >= 512 * KiB, 10 * et.TIME_SCALE)
        self.assertGreaterEqual(self.free_bytes(small), 512 * KiB)
        # Room again: the re-check finds it, the tier admits again.
        os.unlink(filler)
        for _ in range(3):
            self.assertEqual(self.read_all(d), 0)
        ok = et.wait_for(lambda: self.read_all(d) == 0 and self.disk(d)["state"] == "ok",
                         30 * et.TIME_SCALE)
        st = self.disk(d)
        self.assertTrue(ok, st)
        self.assertGreater(st["budget"], 4 * MiB)
        self.assertEqual(st["checksum_errors"], 0)
        self.assertEqual(d.unmount(), 0)

    def test_io_errors_mark_the_tier_failed(self):
        src, cache = self.writable_faultfs()
        d = self.mount(self.lower, opts=[
            "cache.memory=2MiB", "cache.disk_path=" + cache, "cache.disk_size=64MiB",
            "fuse.kernel_cache=false"])
        self.assertEqual(self.read_all(d), 0)
        self.wait_idle(d, FILES)
        lower0 = d.stats()["bytes_read_lower"]
        # The second epoch is served by the tier, through io_uring on FUSE.
        self.assertEqual(self.read_all(d), 0)
        st = d.stats()
        self.assertGreaterEqual(st["tiers"]["disk"]["hits"], FILES - 8)
        self.assertEqual(st["bytes_read_lower"], lower0)
        et.write_file(os.path.join(src, ".fail_all"), b"")
        self.assertEqual(self.read_all(d), 0)
        st = d.stats()
        self.assertEqual(st["tiers"]["disk"]["state"], "failed")
        self.assertGreaterEqual(st["bytes_read_lower"] - lower0, (FILES - 8) * SIZE)
        self.assertTrue(any(w.startswith("the disk tier failed") for w in st["warnings"]),
                        st["warnings"])
        with open(d.path(".epochfs", "metrics")) as f:
            metrics = f.read()
        self.assertRegex(metrics, r'epochfs_tier_state\{[^}]*tier="disk",state="failed"\} 1\n')
        top = subprocess.run([et.epochfs_bin(), "top", "--once", d.mnt], capture_output=True,
                             text=True, timeout=60)
        self.assertIn("disk: FAILED", top.stdout)
        self.assertIn("disk tier " + cache + " failed", d.stderr_text())
        # Failed, it is left alone: a third epoch is exact, from RAM and LOWER.
        hits = st["tiers"]["disk"]["hits"]
        self.assertEqual(self.read_all(d), 0)
        self.assertEqual(self.disk(d)["hits"], hits)
        os.unlink(os.path.join(src, ".fail_all"))
        self.assertEqual(d.unmount(), 0)

    def test_a_disk_that_stops_answering_is_bounded(self):
        src, cache = self.writable_faultfs()
        d = self.mount(self.lower, opts=[
            "cache.memory=2MiB", "cache.disk_path=" + cache, "cache.disk_size=64MiB",
            "fuse.kernel_cache=false", "cache.disk_timeout=2", "lower.timeout=600"])
        self.assertEqual(self.read_all(d), 0)
        self.wait_idle(d, FILES)
        lower0 = d.stats()["bytes_read_lower"]
        et.write_file(os.path.join(src, ".hang_all"), b"")
        # An epoch in a thread: without a bound it would never end.
        result = []
        t = threading.Thread(target=lambda: result.append(self.read_all(d)), daemon=True)
        t.start()
        t.join(120 * et.TIME_SCALE)
        hung = t.is_alive()
        if hung:  # let the disk answer, so that the test ends (failed)
            os.unlink(os.path.join(src, ".hang_all"))
            t.join()
        self.assertFalse(hung, "reads wait for a disk that does not answer")
        self.assertEqual(result, [0])
        st = d.stats()
        self.assertEqual(st["tiers"]["disk"]["state"], "failed")
        self.assertGreaterEqual(st["bytes_read_lower"] - lower0, (FILES - 8) * SIZE)
        self.assertIn("no answer within 2000 ms", d.stderr_text())
        # The disk still does not answer: the daemon unmounts all the same
        # (its writer returns, the tier is left as it is). The process ends
        # once the disk answers: the kernel's worker holding the call given
        # up on (an io_uring open in the fixture) waits for it unkillably.
        subprocess.run(["fusermount3", "-u", d.mnt], check=True)
        self.assertTrue(et.wait_for(lambda: "unmounted " + d.mnt in d.stderr_text(),
                                    30 * et.TIME_SCALE), d.stderr_text())
        self.assertFalse(et.is_mounted(d.mnt))
        os.unlink(os.path.join(src, ".hang_all"))
        self.assertEqual(d.wait_exit(), 0)

    def test_a_disk_that_hangs_at_start_leaves_the_mount_ram_only(self):
        src, cache = self.writable_faultfs()
        et.write_file(os.path.join(src, ".hang_all"), b"")
        # Without a bound on its start the mount would wait for the disk, and
        # this would fail (the mount never answers).
        d = self.mount(self.lower, opts=[
            "cache.memory=2MiB", "cache.disk_path=" + cache, "cache.disk_size=64MiB",
            "fuse.kernel_cache=false", "cache.disk_timeout=2", "lower.timeout=600"])
        st = d.stats()
        self.assertEqual(st["tiers"]["disk"]["state"], "failed", st["tiers"])
        self.assertEqual(st["tiers"]["disk"]["budget"], 0)
        self.assertTrue(any(w.startswith("the disk tier failed") for w in st["warnings"]),
                        st["warnings"])
        self.assertIn("cache.disk_path %s: its start found no answer within 2000 ms" % cache,
                      d.stderr_text())
        self.assertEqual(self.read_all(d), 0)
        self.assertEqual(self.read_all(d), 0)
        st = d.stats()
        self.assertGreaterEqual(st["bytes_read_lower"], (2 * FILES - 8) * SIZE)
        self.assertEqual(st["tiers"]["disk"]["hits"], 0)
        self.assertEqual(st["tiers"]["disk"]["writes"], 0)
        # The disk answers again: the start left behind finishes, and closes
        # what it opened (its lock); the tier stays failed until the next mount.
        os.unlink(os.path.join(src, ".hang_all"))
        self.assertTrue(et.wait_for(lambda: "disk tier " + cache + ": 0 objects" in d.stderr_text(),
                                    30 * et.TIME_SCALE), d.stderr_text())
        self.assertEqual(self.read_all(d), 0)
        st = d.stats()
        self.assertEqual(st["tiers"]["disk"]["state"], "failed")
        self.assertEqual(st["tiers"]["disk"]["writes"], 0)
        self.assertEqual(d.unmount(), 0)
        # The lock was released: the next mount opens the tier, and it works.
        d = self.mount(self.lower, opts=[
            "cache.memory=2MiB", "cache.disk_path=" + cache, "cache.disk_size=64MiB",
            "fuse.kernel_cache=false", "cache.disk_timeout=2"])
        self.assertEqual(self.read_all(d), 0)
        self.wait_idle(d, FILES)
        self.assertEqual(self.disk(d)["state"], "ok")
        self.assertEqual(d.unmount(), 0)

    def test_not_writable_directory_fails_naming_it(self):
        ro = self.mount_tmpfs("ro", "ro,size=1m")
        mnt = self.make_mountpoint()
        r = subprocess.run(self.epochfs_cmd(self.lower, mnt, [
            "cache.memory=2MiB", "cache.disk_path=" + ro, "cache.disk_size=8MiB"]),
            capture_output=True, text=True, timeout=et.EXIT_TIMEOUT)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cache.disk_path %s: not writable" % ro, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertFalse(et.is_mounted(mnt))

    def test_concurrent_readers_across_block_boundaries(self):
        block = 64 * KiB
        big = et.det_bytes(3 * MiB + 777, 5)
        et.write_file(os.path.join(self.lower, "big.bin"), big)
        disk = self.make_dir("disk")
        d = self.mount(self.lower, opts=[
            "cache.memory=1MiB", "cache.block_size=64KiB", "cache.disk_path=" + disk,
            "cache.disk_size=64MiB", "fuse.kernel_cache=false"])
        self.assertEqual(et.read_file(d.path("big.bin")), big)
        blocks = (len(big) + block - 1) // block
        self.wait_idle(d, blocks)
        lower0 = d.stats()["bytes_read_lower"]
        wrong = []

        def reader(k):
            with open(d.path("big.bin"), "rb") as f:
                fd = f.fileno()
                for i in range(1, blocks):
                    b = (i * 7 + k * 13) % blocks or 1  # a boundary, in another order each
                    off = b * block - 100 - 37 * k
                    n = 200 + block * (k % 3)  # 200 bytes, or one or two blocks more
                    if os.pread(fd, n, off) != big[off:off + n]:
                        wrong.append((k, off, n))

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(wrong, [])
        st = d.stats()
        # The blocks RAM does not hold came from the disk tier, not LOWER.
        self.assertGreater(st["tiers"]["disk"]["hits"], 0)
        self.assertEqual(st["bytes_read_lower"], lower0)
        self.assertEqual(st["tiers"]["disk"]["checksum_errors"], 0)
        self.assertEqual(d.unmount(), 0)


if __name__ == "__main__":
    et.main()
