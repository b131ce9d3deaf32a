"""fuse.no_open: hot reads with no request, on a real mount.

The dataset session answers OPEN and FLUSH with ENOSYS, so the kernel opens
dataset files by itself and sends a READ only for pages it lacks; the control
directory is a second FUSE session mounted on MOUNTPOINT/.epochfs. Checked here
with the daemon's own counters and the kernel's page-cache residency
(fincore(1) through the mount):
  - bytes are LOWER's (whole objects read in several READs, blocks with a
    short last block under concurrent readers, streamed files);
  - a file is one access however many READs it takes, and a hot pass makes no
    request but for pages the kernel dropped (refills: no miss, and LOWER is
    read only for them); no check needs the kernel to keep pages longer than
    a read (under memory pressure it reclaims them within a second);
  - an object the policy evicts leaves the kernel's page cache too, and the
    kernel never holds more cached dataset bytes than the budget;
  - pages the kernel reclaims by itself are served again by the daemon, and
    a file that lost some of its pages goes back to the kernel once refilled;
  - prefetched files (policy "future") are hits at their first read;
  - a hot epoch's hits reach the job's `status` through EpochfsSampler's
    `position` reports (each write(2) one report);
  - control files work through their own session (a bad write fails at
    close), and so does the spill area (test_spill_posix.py runs every case
    on it); `umount -R`, `fusermount3 -u -z` and SIGTERM end the daemon
    cleanly, spill data written back (a plain `fusermount3 -u` is refused
    while the nested sessions are mounted inside);
  - under cache.consistency = "open" a file changed on LOWER (even replaced
    with the same size and mtime) is read new at its next open, and a reader
    holding the old one open gets ESTALE from the daemon, never new bytes;
  - what fuse.no_open does not combine with is refused with a clear error.
"""

import errno
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()  # the epochfs package (EpochfsSampler), as pip installs it
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402
import epochfs.sampler  # noqa: E402
from test_jobs import ctl_write  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
WAIT = 30


class NoOpenTest(et.MountTestCase):
    def mount_no_open(self, lower, opts=()):
        return self.mount(lower, opts=["fuse.no_open=true", "cache.policy=lru"] + list(opts))

    def test_hot_passes_make_no_request_and_bytes_are_lowers(self):
        # 40 small files (one READ each) and 3 of 1.5 MiB (several READs).
        lower, want = self.dataset([100 * KiB + 7 * i for i in range(40)] + [3 * MiB // 2] * 3)
        d = self.mount_no_open(lower, ["cache.memory=64MiB"])
        # The control directory is a mount of its own on the dataset's.
        self.assertNotEqual(os.stat(d.mnt).st_dev, os.stat(d.path(".epochfs")).st_dev)
        self.assertEqual(len(et.mount_entries(d.path(".epochfs"))), 1)
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data, name)
        st = d.stats()
        self.assert_stats_sane(st)
        # One access per file, whatever the READs: the first 40 exactly; a
        # large file's read-ahead windows may race its first READ (at most
        # one more access each, never a second load: single flight).
        self.assertGreaterEqual(st["misses"], len(want))
        self.assertLessEqual(st["misses"] + st["hits"], len(want) + 3, st)
        self.assertEqual(st["bytes_read_lower"], sum(len(v) for v in want.values()), st)
        for _ in range(2):  # hot: from the kernel's pages, nothing reaches the daemon
            for name, data in want.items():
                self.assertEqual(et.read_file(d.path(name)), data, name)
        hot = d.stats()
        # ... but pages the kernel dropped since (under memory pressure it
        # reclaims pages read once within a second): each such READ is a
        # refill of its file from LOWER, never a miss.
        refills = hot["refills"] - st["refills"]
        self.assertEqual(hot["misses"], st["misses"], hot)
        self.assertLessEqual(hot["bytes_read_lower"] - st["bytes_read_lower"],
                             refills * 3 * MiB // 2, hot)
        if refills == 0:
            self.assertEqual(hot["hits"], st["hits"], hot)

    def test_evicted_objects_leave_the_kernels_page_cache(self):
        # 16 files of 512 KiB through a 4 MiB budget (lru): most are evicted.
        lower, want = self.dataset([512 * KiB] * 16, seed=20)
        budget = 4 * MiB
        d = self.mount_no_open(lower, ["cache.memory=%d" % budget])
        names = sorted(want)
        self.assertEqual(et.read_file(d.path(names[0])), want[names[0]])
        self.assertEqual(et.cached_bytes(d.path(names[0])), 512 * KiB)
        for name in names[1:]:
            self.assertEqual(et.read_file(d.path(name)), want[name], name)
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertGreater(st["evictions"], 0, st)
        # The first file left the RAM tier (lru), so its pages leave the kernel.
        self.assertTrue(et.wait_for(lambda: et.cached_bytes(d.path(names[0])) == 0, WAIT),
                        "evicted file still has %d bytes in the page cache"
                        % et.cached_bytes(d.path(names[0])))
        # And the kernel's copies of all files together stay within the budget.
        total = lambda: sum(et.cached_bytes(d.path(n)) for n in names)  # noqa: E731
        self.assertTrue(et.wait_for(lambda: total() <= budget, WAIT),
                        "%d bytes cached by the kernel, budget %d" % (total(), budget))
        # Read again: bytes still LOWER's.
        for name in names:
            self.assertEqual(et.read_file(d.path(name)), want[name], name)

    def test_pages_the_kernel_reclaims_are_served_again(self):
        # Files of one READ each (64 KiB): each is one access, whatever order
        # a file's READs would be handled in.
        lower, want = self.dataset([64 * KiB] * 4, seed=40)
        d = self.mount_no_open(lower, ["cache.memory=64MiB"])
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        # One copy: each file went to the kernel whole, and the daemon let go
        # of its bytes (still charged: `used` does not move). The hand-over
        # follows the reply that completes a file.
        kernel = {"objects": 4, "bytes": 256 * KiB}
        self.assertTrue(et.wait_for(lambda: d.stats()["tiers"]["kernel"] == kernel, WAIT),
                        d.stats())
        before = d.stats()
        self.assertEqual(before["tiers"]["ram"], {"objects": 0, "bytes": 0}, before)
        self.assertEqual((before["used"], before["handovers"]), (256 * KiB, 4), before)
        et.drop_pages(d.path(n) for n in want)  # the kernel reclaims
        for name in want:
            self.assertEqual(et.cached_bytes(d.path(name)), 0, name)
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        after = d.stats()
        # Each file's READ reached the daemon again: its bytes read again from
        # LOWER (a refill, not a hit), then handed over again.
        self.assertEqual(after["hits"], before["hits"], after)
        self.assertEqual(after["refills"] - before["refills"], len(want), after)
        self.assertEqual(after["misses"], before["misses"])
        self.assertEqual(after["bytes_read_lower"] - before["bytes_read_lower"], 256 * KiB)
        self.assertTrue(et.wait_for(lambda: d.stats()["tiers"]["kernel"] == kernel, WAIT),
                        d.stats())
        self.assertEqual(after["used"], before["used"])

    def test_a_file_that_lost_some_pages_goes_back_to_the_kernel(self):
        # The kernel drops 64 KiB inside a 1 MiB file it had been handed: the
        # READ of them refills the file from LOWER (a hit), and once served
        # the file is the kernel's again (the daemon keeps no copy of it).
        lower, want = self.dataset([MiB, 64 * KiB], seed=45)
        d = self.mount_no_open(lower, ["cache.memory=64MiB"])
        name = "f000.bin"
        for n, data in want.items():
            self.assertEqual(et.read_file(d.path(n)), data)
        kernel = {"objects": 2, "bytes": MiB + 64 * KiB}
        self.assertTrue(et.wait_for(lambda: d.stats()["tiers"]["kernel"] == kernel, WAIT),
                        d.stats())
        before = d.stats()
        fd = os.open(d.path(name), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 256 * KiB, 64 * KiB, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        self.assertLessEqual(et.cached_bytes(d.path(name)), MiB - 64 * KiB)
        self.assertEqual(et.read_file(d.path(name)), want[name])
        self.assertTrue(et.wait_for(lambda: d.stats()["tiers"]["kernel"] == kernel, WAIT),
                        d.stats())
        after = d.stats()
        self.assertEqual(after["tiers"]["ram"], {"objects": 0, "bytes": 0}, after)
        refills = after["refills"] - before["refills"]
        self.assertGreaterEqual(refills, 1, after)
        self.assertEqual(after["hits"], before["hits"], after)  # a refill is not a hit
        self.assertEqual(after["misses"], before["misses"], after)
        self.assertEqual(after["bytes_read_lower"] - before["bytes_read_lower"], refills * MiB)
        self.assertEqual(after["used"], before["used"])

    def test_a_large_file_that_lost_some_pages_stays_until_sent_whole(self):
        # Above 4 MiB a refill (the whole file from LOWER) is not handed back
        # at once: the daemon keeps the file until the kernel has been sent
        # all of it, so that reading more of what the kernel lost is served
        # from RAM, not by another read of the whole file from LOWER.
        size = 6 * MiB
        lower, want = self.dataset([size], seed=46)
        d = self.mount_no_open(lower, ["cache.memory=64MiB"])
        name = "f000.bin"
        self.assertEqual(et.read_file(d.path(name)), want[name])
        kernel = {"objects": 1, "bytes": size}
        self.assertTrue(et.wait_for(lambda: d.stats()["tiers"]["kernel"] == kernel, WAIT),
                        d.stats())

        def lose_and_read(off):
            fd = os.open(d.path(name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, off, 64 * KiB, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            self.assertEqual(et.read_file(d.path(name)), want[name])
            return d.stats()

        before = d.stats()
        first = lose_and_read(MiB)
        self.assertEqual(first["refills"] - before["refills"], 1, first)
        self.assertEqual(first["bytes_read_lower"] - before["bytes_read_lower"], size, first)
        self.assertEqual(first["misses"], before["misses"], first)
        # Kept: the kernel was sent only what it lost (had it lost the whole
        # file under memory pressure, it was sent it whole and has it back).
        if first["tiers"]["ram"]["bytes"] == 0:
            self.skipTest("the kernel lost the whole file (memory pressure)")
        self.assertEqual(first["tiers"]["ram"], {"objects": 1, "bytes": size}, first)
        second = lose_and_read(3 * MiB)
        self.assertEqual((second["refills"], second["bytes_read_lower"], second["misses"]),
                         (first["refills"], first["bytes_read_lower"], first["misses"]), second)
        self.assertEqual(second["used"], before["used"])

    def test_one_copy_the_daemon_keeps_no_bytes_the_kernel_holds(self):
        # 48 files of 1 MiB through a 256 MiB budget: once read, the kernel's
        # page cache holds them and the daemon's memory returns to where it
        # was (objects of 32 KiB and more are mmap'd: freed, they leave the
        # process). The daemon's growth is bounded well below the data.
        lower, want = self.dataset([MiB + i for i in range(48)], seed=60)
        with et.asan_frees_at_once():
            d = self.mount_no_open(lower, ["cache.memory=256MiB"])
        rss0 = et.rss_bytes(d.proc.pid)
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        total = sum(len(v) for v in want.values())
        kernel = {"objects": 48, "bytes": total}
        self.assertTrue(et.wait_for(lambda: d.stats()["tiers"]["kernel"] == kernel, WAIT),
                        d.stats())
        st = d.stats()
        self.assertEqual(st["tiers"]["ram"]["bytes"], 0, st)
        # The kernel's page cache holds them now, as much as it keeps: under
        # memory pressure (a memory cgroup near its limit) it reclaims pages
        # read once within a second. Not checked: what it drops comes back
        # as refills (below).
        grown = lambda: et.rss_bytes(d.proc.pid) - rss0  # noqa: E731
        self.assertTrue(et.wait_for(lambda: grown() < 16 * MiB, WAIT),
                        "daemon RSS grew %d bytes for %d bytes cached" % (grown(), total))
        before = d.stats()
        for name, data in want.items():  # hot, from the kernel
            self.assertEqual(et.read_file(d.path(name)), data)
        after = d.stats()
        # Served by the kernel. What reaches the daemon is pages the kernel
        # dropped since (on its own, a few pages of a few files, or all of
        # them if something beside drops caches): each is a refill of its file
        # from LOWER, a hit, never a miss.
        self.assertEqual(after["misses"], before["misses"], after)
        refills = after["refills"] - before["refills"]
        self.assertLessEqual(after["bytes_read_lower"] - before["bytes_read_lower"],
                             refills * (MiB + 47), after)

    def test_one_copy_off_keeps_the_daemons_copy(self):
        lower, want = self.dataset([MiB + i for i in range(16)], seed=61)
        d = self.mount_no_open(lower, ["cache.memory=256MiB", "fuse.one_copy=false"])
        rss0 = et.rss_bytes(d.proc.pid)
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        st = d.stats()
        total = sum(len(v) for v in want.values())
        self.assertEqual((st["handovers"], st["tiers"]["kernel"]["objects"]), (0, 0), st)
        self.assertEqual(st["tiers"]["ram"], {"objects": 16, "bytes": total}, st)
        self.assertGreater(et.rss_bytes(d.proc.pid) - rss0, total // 2)

    def test_blocks_and_streams_are_byte_exact_under_concurrent_readers(self):
        # A 2 MiB budget caches objects of at most 512 KiB: the 3.3 MiB file
        # is read in 256 KiB blocks (its last one short).
        lower, want = self.dataset([3 * MiB + 300 * KiB + 13, 100 * KiB], seed=60)
        d = self.mount_no_open(lower, ["cache.memory=2MiB", "cache.block_size=256KiB"])
        big = "f000.bin"
        errors = []

        def reader(seed):
            rng = random.Random(seed)
            try:
                with open(d.path(big), "rb") as f:
                    for _ in range(60):
                        off = rng.randrange(0, len(want[big]) + 4096)
                        n = rng.choice([1, 4095, 4096, 65536, 300 * KiB])
                        f.seek(off)
                        got = f.read(n)
                        if got != want[big][off:off + n]:
                            errors.append((seed, off, n))
                            return
            except OSError as e:
                errors.append((seed, e))

        threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(et.read_file(d.path(big)), want[big])
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertEqual(st["streamed_bytes"], 0, st)  # blocks, not a stream
        # The kernel holds no more of the file than the RAM tier does.
        self.assertTrue(et.wait_for(lambda: et.cached_bytes(d.path(big)) <= 2 * MiB, WAIT))

    def test_one_copy_of_blocks_read_sequentially(self):
        # 8 MiB budget: a 3 MiB file is cached in 12 blocks of 256 KiB. Read
        # front to back, each block goes to the kernel when its last byte
        # does; after the kernel drops its pages, the blocks are refilled (and
        # kept: the gate of one copy).
        size = 3 * MiB
        lower, want = self.dataset([size], seed=70)
        d = self.mount_no_open(lower, ["cache.memory=8MiB", "cache.block_size=256KiB"])
        name = "f000.bin"
        block = 256 * KiB
        # At most the block a pass has in hand and the one it loads ahead
        # may be loaded again (READs of one read served by two passes) and
        # stay in the daemon's RAM until the next read.
        def one_copy():
            t = d.stats()["tiers"]
            return t["kernel"]["bytes"] >= size - 2 * block and t["ram"]["bytes"] <= 2 * block
        self.assertEqual(et.read_file(d.path(name)), want[name])
        self.assertTrue(et.wait_for(one_copy, WAIT), d.stats())
        st = d.stats()
        self.assertEqual(st["used"], size, st)
        self.assertGreaterEqual(st["tiers"]["kernel"]["objects"], 10, st)
        self.assertLessEqual(st["bytes_read_lower"], size + 2 * block, st)
        et.drop_pages([d.path(name)])
        self.assertEqual(et.read_file(d.path(name)), want[name])
        # The kernel lost 3 MiB it had been handed, more than an eighth of the
        # budget: one copy's gate shuts (store/handover_gate.h), so the blocks
        # refilled after that keep the daemon's copy instead of going back to
        # a kernel that drops them.
        after = d.stats()
        self.assertGreater(after["tiers"]["ram"]["bytes"], 2 * block, after)
        # Every block the kernel had dropped came back from LOWER.
        self.assertGreaterEqual(after["refills"], st["tiers"]["kernel"]["objects"], after)
        self.assertGreaterEqual(after["bytes_read_lower"] - st["bytes_read_lower"],
                                st["tiers"]["kernel"]["bytes"], after)
        self.assertEqual(after["used"], size)
        self.assertEqual(after["misses"], st["misses"], after)

    def test_a_streamed_file_leaves_no_pages_behind(self):
        # No blocks (block_size 0): a file above a quarter of the budget is
        # streamed from LOWER, so the kernel must not keep it either.
        lower, want = self.dataset([3 * MiB], seed=80)
        d = self.mount_no_open(lower, ["cache.memory=2MiB", "cache.block_size=0"])
        self.assertEqual(et.read_file(d.path("f000.bin")), want["f000.bin"])
        self.assertGreater(d.stats()["streamed_bytes"], 0)
        self.assertTrue(et.wait_for(lambda: et.cached_bytes(d.path("f000.bin")) == 0, WAIT),
                        "%d bytes of a streamed file cached" % et.cached_bytes(d.path("f000.bin")))

    def test_control_files_work_through_their_own_session(self):
        lower, want = self.dataset([10 * KiB] * 4, seed=90)
        d = self.mount_no_open(lower, ["cache.memory=64MiB"])
        jd = d.path(".epochfs", "jobs", "j")
        os.mkdir(jd)
        ctl_write(os.path.join(jd, "config"), "batch_size = 2\nepochs = 2\n")
        ctl_write(os.path.join(jd, "samples"), "".join(n + "\n" for n in sorted(want)))
        ctl_write(os.path.join(jd, "order", "0"), "3 2 1 0\n")
        # A bad write fails at close, as on a mount with opens.
        with self.assertRaises(OSError) as e:
            ctl_write(os.path.join(jd, "order", "1"), "1 2 three\n")
        self.assertEqual(e.exception.errno, errno.EINVAL)
        status = lambda: json.loads(et.read_file(os.path.join(jd, "status")))  # noqa: E731
        self.assertEqual(status()["samples"], 4)
        self.assertEqual(status()["declared_epochs"], [0])
        self.assertIn("order/1", status()["last_error"])
        # Reads in the declared order reach the daemon once per file, as the
        # job's accesses (this process registered itself by writing).
        names = sorted(want)
        for i in (3, 2, 1, 0):
            self.assertEqual(et.read_file(d.path(names[i])), want[names[i]])
        self.assertEqual(status()["accesses"], 4, status())
        self.assertIn("0", os.listdir(os.path.join(jd, "order")))
        self.assertNotIn("1", os.listdir(os.path.join(jd, "order")))
        os.rmdir(jd)
        self.assertNotIn("j", os.listdir(d.path(".epochfs", "jobs")))
        # The dataset is still read-only.
        self.assert_errno(errno.EROFS, os.open, d.path("new"), os.O_WRONLY | os.O_CREAT)
        # umount -R unmounts both sessions; the daemon ends cleanly.
        subprocess.run(["umount", "-R", d.mnt], check=True)
        self.assertEqual(d.wait_exit(), 0)
        self.assertFalse(et.is_mounted(d.mnt))

    def test_prefetched_files_are_hits_at_their_first_read(self):
        # Policy "future" with prefetch: a declared order is loaded before it
        # is read; each file's first READ is then a hit in the RAM tier, and
        # the kernel keeps its pages from there.
        lower, want = self.dataset([40 * KiB + i for i in range(12)], seed=92)
        d = self.mount(lower, opts=["fuse.no_open=true", "cache.policy=future",
                                    "cache.prefetch=2", "cache.memory=64MiB"])
        names = sorted(want)
        jd = d.path(".epochfs", "jobs", "pf")
        os.mkdir(jd)
        ctl_write(os.path.join(jd, "config"), "batch_size = 2\nepochs = 2\n")
        ctl_write(os.path.join(jd, "samples"), "".join(n + "\n" for n in names))
        order = list(reversed(range(len(names))))
        ctl_write(os.path.join(jd, "order", "0"), " ".join(map(str, order)) + "\n")
        self.assertTrue(et.wait_for(lambda: d.stats()["prefetched"] == len(names), WAIT),
                        d.stats())
        for k in order:
            self.assertEqual(et.read_file(d.path(names[k])), want[names[k]])
        st = d.stats()
        self.assertEqual((st["hits"], st["misses"], st["prefetch_hits"]),
                         (len(names), 0, len(names)), st)
        self.assertEqual(st["bytes_read_lower"], sum(len(v) for v in want.values()), st)
        for k in order:  # the kernel's pages now: nothing reaches the daemon
            self.assertEqual(et.read_file(d.path(names[k])), want[names[k]])
        self.assertEqual(d.stats()["hits"], len(names))

    def test_a_hot_epochs_hits_come_from_the_samplers_position_reports(self):
        # A job reading through EpochfsSampler (batch 4, 1 loader: W = 8).
        # Epoch 1 is hot: the kernel serves every read and the daemon hears of
        # none; the sampler's `position` reports make them hits in `status`,
        # and epoch 2's marker the last W.
        n = 48
        lower, want = self.dataset([20 * KiB + i for i in range(n)], seed=95)
        d = self.mount(lower, opts=["fuse.no_open=true", "cache.policy=future",
                                    "cache.prefetch=0", "cache.memory=64MiB"])
        names = sorted(want)
        paths = [d.path(x) for x in names]
        orders = {e: random.Random(e).sample(range(n), n) for e in range(3)}
        sampler = epochfs.sampler.EpochfsSampler(list(range(n)), d.mnt, "hot", paths, 4, 3,
                                                 loaders=1, order_fn=orders.__getitem__,
                                                 close_at_exit=False, strict=True)
        jd = d.path(".epochfs", "jobs", "hot")
        status = lambda: json.loads(et.read_file(os.path.join(jd, "status")))  # noqa: E731

        def epoch(e):
            got = []
            for i in iter(sampler):
                self.assertEqual(et.read_file(paths[i]), want[names[i]], names[i])
                got.append(i)
            self.assertEqual(got, orders[e])

        epoch(0)
        cold = d.stats()
        self.assertEqual((cold["misses"], cold["bytes_read_lower"]),
                         (n, sum(len(v) for v in want.values())), cold)
        st = status()
        self.assertEqual((st["epoch"], st["misses"]), (0, n), st)
        self.assertEqual(et.read_file(os.path.join(jd, "position")), b"0 %d\n" % n)
        epoch(1)
        hot = d.stats()
        self.assertEqual((hot["hits"], hot["misses"], hot["bytes_read_lower"]),
                         (cold["hits"], cold["misses"], cold["bytes_read_lower"]),
                         "a hot epoch reached the daemon")
        st = status()
        self.assertEqual(st["epoch"], 1, st)
        self.assertEqual(st["position"], {"epoch": 1, "position": n}, st)
        self.assertEqual((st["hits"], st["misses"]), (n - 8, 0), st)
        epoch(2)
        st = status()
        self.assertEqual([(e["epoch"], e["hits"], e["misses"]) for e in st["epochs"]],
                         [(0, 0, n), (1, n, 0), (2, n - 8, 0)], st)
        self.assertEqual(d.stats()["misses"], n)
        # `position` takes each write(2) at once: a bad report fails the write
        # itself, with the reason in status; the next good one is taken.
        fd = os.open(os.path.join(jd, "position"), os.O_WRONLY)
        try:
            self.assert_errno(errno.EINVAL, os.write, fd, b"2 %d\n" % (n + 1))
            self.assertIn("past the end", status()["last_error"])
            self.assertEqual(os.write(fd, b"2 %d\n" % n), len(b"2 %d\n" % n))
        finally:
            os.close(fd)
        self.assertEqual(status()["hits"], n - 8)
        sampler.close()
        self.assertNotIn("hot", os.listdir(d.path(".epochfs", "jobs")))

    def test_sigterm_unmounts_every_session_and_keeps_the_spill_data(self):
        lower, _ = self.dataset([10 * KiB], seed=95)
        ssd = os.path.join(self.tmp, "ssd")  # the real disk: the store uses O_DIRECT
        d = self.mount_no_open(lower, ["spill.path=" + ssd])
        data = et.det_bytes(3 * MiB + 5, 96)
        et.write_file(d.path(".spill", "act.bin"), data)  # staged, written back at exit
        self.assertEqual(et.read_file(d.path(".spill", "act.bin")), data)
        d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait_exit(), 0)
        for sub in ("", ".epochfs", ".spill"):
            self.assertFalse(et.is_mounted(os.path.join(d.mnt, sub)), sub)
        d = self.mount_no_open(lower, ["spill.path=" + ssd])
        self.assertEqual(et.read_file(d.path(".spill", "act.bin")), data)

    def test_after_sigkill_the_remount_refusal_names_what_works(self):
        # A killed daemon leaves its three sessions mounted and dead: the
        # refusal advises `umount -R` (fusermount3 -u fails with EBUSY on the
        # mounts beneath), and that command does clear them.
        lower, want = self.dataset([10 * KiB], seed=99)
        d = self.mount_no_open(lower)
        d.proc.kill()
        d.wait_exit()
        r = subprocess.run(self.epochfs_cmd(lower, d.mnt, ["fuse.no_open=true"]),
                           capture_output=True, text=True, timeout=et.EXIT_TIMEOUT)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("umount -R " + d.mnt, r.stderr)
        self.assertNotEqual(subprocess.run(["fusermount3", "-u", d.mnt],
                                           capture_output=True).returncode, 0)
        subprocess.run(["umount", "-R", d.mnt], check=True)
        self.assertFalse(et.is_mounted(d.mnt))
        d = self.mount_no_open(lower)
        self.assertEqual(et.read_file(d.path("f000.bin")), want["f000.bin"])

    def test_a_lazy_unmount_ends_the_daemon(self):
        lower, want = self.dataset([10 * KiB], seed=97)
        d = self.mount_no_open(lower)
        self.assertEqual(et.read_file(d.path("f000.bin")), want["f000.bin"])
        # A plain unmount is refused while the control session is on the mount.
        r = subprocess.run(["fusermount3", "-u", d.mnt], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(et.is_mounted(d.mnt))
        subprocess.run(["fusermount3", "-u", "-z", d.mnt], check=True)
        self.assertEqual(d.wait_exit(), 0)
        self.assertFalse(et.is_mounted(d.mnt))

    def test_a_control_session_that_cannot_mount_ends_the_mount(self):
        # strace fails only the mount(2) whose target is MOUNTPOINT/.epochfs (-P),
        # in the daemon and in the fusermount3 it falls back to, whichever
        # thread makes it: the dataset session mounts, the control session does
        # not. Foreground and background: the command says why and exits 1, and
        # nothing is left mounted (before the exit in the background case).
        lower, _ = self.dataset([10 * KiB], seed=101)
        for foreground in (True, False):
            mnt = self.make_mountpoint()
            ctl = os.path.join(mnt, ".epochfs")
            cmd = ["strace", "-f", "-qq", "-o", os.devnull, "-P", ctl, "-e", "trace=mount",
                   "-e", "inject=mount:error=EPERM"]
            cmd += self.epochfs_cmd(lower, mnt, ["fuse.no_open=true"], foreground=foreground)
            env = dict(os.environ)  # LeakSanitizer cannot run under ptrace
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=et.EXIT_TIMEOUT,
                               env=env)
            self.assertEqual(r.returncode, 1, (foreground, r.stderr))
            self.assertIn("control directory: cannot mount " + ctl, r.stderr, foreground)
            self.assertFalse(et.is_mounted(mnt), foreground)
            self.assertEqual(os.listdir(mnt), [], foreground)

    def test_a_changed_file_is_never_served_stale_under_consistency_open(self):
        # consistency "open" without OPEN: every open revalidates the name
        # (entry timeout 0: one LOOKUP, no OPEN or RELEASE); a file whose
        # version changed gets a new inode there, so the kernel cannot serve
        # the old one's pages, and a READ of the old inode is ESTALE.
        lower, want = self.dataset([96 * KiB] * 3, seed=70)
        d = self.mount_no_open(lower, ["cache.memory=64MiB", "cache.consistency=open"])
        names = sorted(want)
        for _ in range(2):
            for name in names:
                self.assertEqual(et.read_file(d.path(name)), want[name], name)
        hot = d.stats()
        self.assertEqual(hot["misses"], len(names), hot)

        def replace(name, data, keep_mtime):
            # A new file renamed over the old one (another lower inode), of
            # the same size and, with keep_mtime, the same mtime: only the
            # inode number tells the versions apart (the kernel compares
            # size and mtime alone).
            path = os.path.join(lower, name)
            old = os.stat(path)
            et.write_file(path + ".new", data)
            if keep_mtime:
                os.utime(path + ".new", ns=(old.st_atime_ns, old.st_mtime_ns))
            os.rename(path + ".new", path)
            want[name] = data

        # 1. Replaced under the kernel's pages of it: a new open reads the new bytes.
        first = d.path(names[0])
        resident = et.cached_bytes(first)
        replace(names[0], et.det_bytes(96 * KiB, 170), keep_mtime=True)
        self.assertEqual(et.read_file(first), want[names[0]],
                         "stale bytes (the kernel held %d bytes of the old file)" % resident)
        self.assertEqual(et.read_file(first), want[names[0]])  # and again, hot
        # 2. Rewritten in place, another size.
        want[names[1]] = et.det_bytes(80 * KiB, 171)
        et.write_file(os.path.join(lower, names[1]), want[names[1]])
        self.assertEqual(et.read_file(d.path(names[1])), want[names[1]])
        # 3. Changed while a reader holds it open: what that reader reads from
        # the daemon after the change is ESTALE, never the new bytes.
        third = d.path(names[2])
        fd = os.open(third, os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 32 * KiB, 0), want[names[2]][:32 * KiB])
            old = want[names[2]]
            replace(names[2], et.det_bytes(96 * KiB, 172), keep_mtime=True)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the kernel lost its pages
            try:
                got = os.pread(fd, 32 * KiB, 64 * KiB)
                self.assertEqual(got, old[64 * KiB:96 * KiB], "a READ of the old inode served new bytes: %s" % (got == want[names[2]][64 * KiB:96 * KiB]))
            except OSError as e:
                self.assertEqual(e.errno, errno.ESTALE, e)
        finally:
            os.close(fd)
        self.assertEqual(et.read_file(third), want[names[2]])
        st = d.stats()
        self.assert_stats_sane(st)
        for name in names:
            self.assertEqual(et.read_file(d.path(name)), want[name], name)

    def test_a_user_other_than_root_mounts_it_with_allow_other(self):
        # As a user, the nested sessions are mounted by the set-uid
        # fusermount3, which the kernel lets into the dataset session only
        # with allow_other (user_allow_other in /etc/fuse.conf), on
        # mountpoints the user may write. Run in a mount namespace of its
        # own, with a /dev/fuse node the user may open and /etc/fuse.conf
        # overlaid: nothing of the machine changes.
        user = 65534  # nobody
        work = self.make_dir("user")
        os.chmod(self.tmp, 0o755)
        lower, mnt = os.path.join(work, "lower"), os.path.join(work, "mnt")
        os.makedirs(lower)
        os.makedirs(mnt)
        data = et.det_bytes(200 * KiB, 98)
        et.write_file(os.path.join(lower, "f.bin"), data)
        binary = os.path.join(work, "epochfs")
        shutil.copy(et.epochfs_bin(), binary)  # the build tree may be closed to the user
        for d in (work, lower, mnt):
            os.chown(d, user, user)
        os.chmod(binary, 0o755)
        etc_up, etc_work = self.make_dir("etc-up"), self.make_dir("etc-work")
        with open(os.path.join(etc_up, "fuse.conf"), "w") as f:
            f.write("user_allow_other\n")
        fuse_dev = os.stat("/dev/fuse").st_rdev
        node = os.path.join(self.tmp, "fuse")
        os.mknod(node, 0o666 | stat.S_IFCHR, fuse_dev)
        os.chmod(node, 0o666)
        as_user = "setpriv --reuid=%d --regid=%d --clear-groups " % (user, user)
        script = """
set -e
mount --make-rprivate /
mount --bind {node} /dev/fuse
mount -t overlay overlay -o lowerdir=/etc,upperdir={up},workdir={wk} /etc
{u}{bin} -f -o fuse.no_open=true,fuse.allow_other=true,cache.policy=lru {lower} {mnt} 2>{work}/log &
daemon=$!
trap 'kill -9 $daemon 2>/dev/null || true' EXIT
i=0
until grep -q " {mnt}/.epochfs " /proc/self/mounts; do
  i=$((i+1)); [ $i -lt 600 ] || {{ echo "no control mount"; cat {work}/log; exit 1; }}
  kill -0 $daemon || {{ cat {work}/log; exit 1; }}
  sleep 0.05
done
{u}cat {mnt}/f.bin > {work}/got
{u}cat {mnt}/f.bin > /dev/null
{u}cat {mnt}/.epochfs/version
{u}mkdir {mnt}/.epochfs/jobs/j
{u}cat {mnt}/.epochfs/jobs/j/status
{u}fusermount3 -u -z {mnt}
wait $daemon
echo "daemon exit $?"
""".format(node=node, up=etc_up, wk=etc_work, u=as_user, bin=binary, lower=lower, mnt=mnt,
           work=work)
        r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("protocol", r.stdout)
        self.assertIn('"owner": %d' % user, r.stdout)  # the job, registered by its mkdir
        self.assertIn("daemon exit 0", r.stdout)
        with open(os.path.join(work, "got"), "rb") as f:
            self.assertEqual(f.read(), data)
        # Without allow_other a user is refused, with the reason.
        r = subprocess.run(["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups",
                            binary, "-o", "fuse.no_open=true", lower, mnt],
                           capture_output=True, text=True, timeout=et.EXIT_TIMEOUT)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("fuse.allow_other", r.stderr)
        self.assertFalse(et.is_mounted(mnt))

    def test_what_it_cannot_combine_with_is_refused(self):
        lower, _ = self.dataset([10 * KiB], seed=99)
        for opts, words in ((["fuse.kernel_cache=false"], "fuse.kernel_cache"),):
            mnt = self.make_mountpoint()
            r = subprocess.run(self.epochfs_cmd(lower, mnt, ["fuse.no_open=true"] + opts),
                               capture_output=True, text=True, timeout=et.EXIT_TIMEOUT)
            self.assertNotEqual(r.returncode, 0, opts)
            self.assertIn("fuse.no_open", r.stderr, opts)
            self.assertIn(words, r.stderr, opts)
            self.assertFalse(et.is_mounted(mnt))


if __name__ == "__main__":
    et.main()
