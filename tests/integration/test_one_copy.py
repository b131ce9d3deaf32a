"""fuse.one_copy on a mount that answers OPEN (without fuse.no_open).

Every open still reaches the daemon, so the policy hears of every read; but
once the kernel has been sent every byte of a cached file, the daemon lets go
of its own bytes and keeps a stub that stays charged to the budget: the file
is in memory once, in the kernel's page cache, which the next opens keep.
Checked on a real mount with the daemon's counters, its RSS and the kernel's
page-cache residency (fincore(1) through the mount):
  - the daemon's memory does not grow with the files it hands over, and a
    hot pass is one hit per open, served from the kernel's pages;
  - pages the kernel lost are read again from LOWER at their READ (a refill,
    not another access for the policy), byte-exact under concurrent readers;
    of a file of several blocks, only the pieces of 256 KiB (or of the
    block, if smaller) that hold them; the open
    whose READ needed the refill counts as a refill, not a hit, in stats,
    metrics, the job's status and the trace (which still replays);
  - the kernel's pages of dataset files stay within the budget: an evicted
    file's leave, and so do those of a file in blocks at its release;
  - a file changed on LOWER is read new under cache.consistency = "open";
    a refill that finds other bytes than those handed over fails with ESTALE
    rather than mix them with the kernel's pages of the old ones;
  - the memory governor counts only the bytes the daemon holds as cache
    (handed-over pages are already available memory to it);
  - a kernel that keeps losing what it is handed (refills of an eighth of
    the budget) gets no more hand-overs: the daemon keeps its copy of the
    files read meanwhile, and of those the kernel lost from their start;
    a file the kernel lost a few pages of is refilled in those pieces the
    first time, and whole once its pieces have cost half of it (the daemon
    keeps it, and its next loss is answered from RAM, not LOWER);
  - fuse.one_copy = false keeps the daemon's copy.
No check needs the kernel to keep pages longer than a read: what it reclaims
on its own comes back as refills, which the checks allow for.
"""

import errno
import json
import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
WAIT = 30


class OneCopyTest(et.MountTestCase):
    def mount_one_copy(self, lower, opts=()):
        return self.mount(lower, opts=["fuse.one_copy=true", "cache.policy=lru"] + list(opts))

    def wait_kernel_tier(self, d, objects, nbytes):
        want = {"objects": objects, "bytes": nbytes}
        self.assertTrue(et.wait_for(lambda: d.stats()["tiers"]["kernel"] == want, WAIT), d.stats())

    def test_the_daemon_keeps_no_bytes_the_kernel_holds(self):
        # 48 files of 1 MiB through a 256 MiB budget (objects of 32 KiB and
        # more are mmap'd: freed, they leave the process).
        lower, want = self.dataset([MiB + i for i in range(48)], seed=60)
        with et.asan_frees_at_once():
            d = self.mount_one_copy(lower, ["cache.memory=256MiB"])
        rss0 = et.rss_bytes(d.proc.pid)
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        total = sum(len(v) for v in want.values())
        self.wait_kernel_tier(d, 48, total)
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertEqual(st["tiers"]["ram"], {"objects": 0, "bytes": 0}, st)
        self.assertEqual((st["used"], st["handovers"], st["misses"]), (total, 48, 48), st)
        grown = lambda: et.rss_bytes(d.proc.pid) - rss0  # noqa: E731
        self.assertTrue(et.wait_for(lambda: grown() < 16 * MiB, WAIT),
                        "daemon RSS grew %d bytes for %d bytes cached" % (grown(), total))
        before = d.stats()
        for name, data in want.items():  # hot: each open a hit, the bytes the kernel's
            self.assertEqual(et.read_file(d.path(name)), data)
        after = d.stats()
        # One hit per open, but an open whose pages the kernel dropped on its
        # own meanwhile: a refill.
        refills = after["refills"] - before["refills"]
        self.assertEqual(after["hits"] - before["hits"] + refills, 48, after)
        self.assertEqual(after["misses"], before["misses"], after)
        # LOWER is read again only for pages the kernel dropped on its own.
        self.assertLessEqual(after["bytes_read_lower"] - before["bytes_read_lower"],
                             refills * (MiB + 47), after)
        self.assertEqual(after["used"], total, after)

    def test_pages_the_kernel_lost_are_refilled_at_their_read(self):
        # Files of one READ each (64 KiB), read by four threads at once once
        # the kernel has lost them.
        lower, want = self.dataset([64 * KiB] * 4, seed=40)
        d = self.mount_one_copy(lower, ["cache.memory=64MiB"])
        # Each file held open throughout (its first open: the miss), so that
        # the kernel keeps its inode: one it forgot (a drop_caches on the
        # host reclaims dentries and inodes too) comes back as a new inode
        # the kernel holds nothing of, whose opens read the file again.
        for name in want:
            self.addCleanup(os.close, os.open(d.path(name), os.O_RDONLY))
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 4, 256 * KiB)
        before = d.stats()
        et.drop_pages(d.path(n) for n in want)  # the kernel reclaims (4 opens: 4 hits)
        for name in want:
            self.assertEqual(et.cached_bytes(d.path(name)), 0, name)
        bad = []

        def reader():
            for name, data in want.items():
                if et.read_file(d.path(name)) != data:
                    bad.append(name)

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(bad, [])
        after = d.stats()
        # One access per open (4 to drop the pages, 4 by fincore, 16 to
        # read): a hit, or a refill when its READ read the file again from
        # LOWER or waited for another open's refill (at least one per file).
        refills = after["refills"] - before["refills"]
        self.assertEqual(after["hits"] - before["hits"] + refills, 24, after)
        self.assertEqual(after["misses"], before["misses"], after)
        self.assertEqual(after["coalesced"], before["coalesced"], after)
        self.assertGreaterEqual(refills, 4, after)
        read = after["bytes_read_lower"] - before["bytes_read_lower"]
        self.assertEqual(after["refill_bytes"] - before["refill_bytes"], read, after)
        self.assertEqual(read % (64 * KiB), 0, after)
        self.assertGreaterEqual(read, 4 * 64 * KiB, after)
        self.assertLessEqual(read, refills * 64 * KiB, after)
        self.wait_kernel_tier(d, 4, 256 * KiB)
        self.assertEqual(d.stats()["tiers"]["ram"], {"objects": 0, "bytes": 0})
        self.assertEqual(after["used"], before["used"], after)

    def test_a_range_the_kernel_asks_twice_hands_nothing_over(self):
        # The kernel asks for the first half of a file twice (it dropped those
        # pages in between) and never for the second half: it does not hold
        # the file, which stays the daemon's. A byte count called it complete
        # and handed it over; the next open then kept the kernel's half and
        # its READs of the other half read the whole file again from LOWER
        # (a refill), every epoch.
        size = 8 * MiB
        half = size // 2
        lower, want = self.dataset([size], seed=90)
        d = self.mount_one_copy(lower, ["cache.memory=64MiB"])
        (name, data), = want.items()
        # Held open throughout (the miss), so that the kernel keeps the inode:
        # a new one (a drop_caches on the host forgets inodes) holds none of
        # the pages, and its open reads the file again.
        self.addCleanup(os.close, os.open(d.path(name), os.O_RDONLY))
        fd = os.open(d.path(name), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead: READs as asked
            self.assertEqual(os.pread(fd, half, 0), data[:half])
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            self.assertEqual(os.pread(fd, half, 0), data[:half])
        finally:
            os.close(fd)
        st = d.stats()
        self.assertEqual((st["misses"], st["handovers"]), (1, 0), st)
        self.assertEqual(st["tiers"]["ram"], {"objects": 1, "bytes": size}, st)
        # The next opens keep the kernel's half; it asks for the other half
        # once, and only then is the file handed over: LOWER was read once.
        for _ in range(3):
            self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 1, size)
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertEqual((st["hits"], st["misses"], st["refills"], st["handovers"]),
                         (4, 1, 0, 1), st)
        self.assertEqual(st["bytes_read_lower"], size, st)

    def test_the_kernels_pages_stay_within_the_budget(self):
        # 16 files of 512 KiB through a 4 MiB budget (lru: most are evicted),
        # then a 6 MB file, read in blocks (larger than a quarter of it).
        lower, want = self.dataset([512 * KiB] * 16 + [6000000], seed=20)
        budget = 4 * MiB
        d = self.mount_one_copy(lower, ["cache.memory=%d" % budget])
        names = sorted(want)
        small, big = names[:16], names[16]
        self.assertEqual(et.read_file(d.path(small[0])), want[small[0]])
        self.wait_kernel_tier(d, 1, 512 * KiB)
        self.assertEqual(et.cached_bytes(d.path(small[0])), 512 * KiB)
        for name in small[1:]:
            self.assertEqual(et.read_file(d.path(name)), want[name], name)
        self.assertTrue(et.wait_for(lambda: et.cached_bytes(d.path(small[0])) == 0, WAIT),
                        "evicted file still has %d bytes in the page cache"
                        % et.cached_bytes(d.path(small[0])))
        self.assertEqual(et.read_file(d.path(big)), want[big])
        # Closed: its pages leave the kernel; its blocks are the daemon's.
        self.assertTrue(et.wait_for(lambda: et.cached_bytes(d.path(big)) == 0, WAIT),
                        "%d bytes of a file in blocks left in the page cache"
                        % et.cached_bytes(d.path(big)))
        st = d.stats()
        self.assert_stats_sane(st)
        self.assertGreater(st["evictions"], 0, st)
        kernel = lambda: sum(et.cached_bytes(d.path(n)) for n in names)  # noqa: E731
        self.assertTrue(et.wait_for(lambda: kernel() + d.stats()["tiers"]["ram"]["bytes"] <= budget,
                                    WAIT),
                        "%d bytes in the page cache, %s" % (kernel(), d.stats()["tiers"]))
        for name in names:
            self.assertEqual(et.read_file(d.path(name)), want[name], name)

    def test_a_changed_file_is_never_mixed_with_the_kernels_pages(self):
        lower, want = self.dataset([256 * KiB, 256 * KiB], seed=70)
        d = self.mount_one_copy(lower, ["cache.memory=64MiB", "cache.consistency=open"])
        a, b = sorted(want)
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 2, 512 * KiB)
        # A new version (another mtime): read new at the next open.
        new_a = et.det_bytes(256 * KiB, 99)
        et.write_file(os.path.join(lower, a), new_a)
        os.utime(os.path.join(lower, a), ns=(1, 10**18))
        self.assertEqual(et.read_file(d.path(a)), new_a)
        # Other bytes with the size, mtime and inode kept (another version by
        # its ctime), found by the refill of pages the kernel lost while the
        # file is open.
        path_b = os.path.join(lower, b)
        st = os.stat(path_b)
        fd = os.open(d.path(b), os.O_RDONLY)
        try:
            new_b = et.det_bytes(256 * KiB, 98)
            with open(path_b, "r+b") as f:
                f.write(new_b)
            os.utime(path_b, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            with self.assertRaises(OSError) as cm:
                os.pread(fd, 256 * KiB, 0)
            self.assertEqual(cm.exception.errno, errno.ESTALE)
        finally:
            os.close(fd)
        # The next open reads the new version, and drops the old one's stub.
        self.assertEqual(et.read_file(d.path(b)), new_b)
        self.assertGreaterEqual(d.stats()["invalidations"], 2, d.stats())

    def test_the_same_bytes_under_another_inode_number_are_refilled(self):
        # LOWER gives an unchanged file another inode number (a FUSE file
        # system without use_ino numbers a node anew once the kernel forgot
        # it; here an identical copy renamed over it, same size and mtime).
        # The refill of pages the kernel lost finds the bytes handed over:
        # they are served, put back once, and no read fails with ESTALE.
        size = 256 * KiB
        lower, want = self.dataset([size], seed=72)
        d = self.mount_one_copy(lower, ["cache.memory=64MiB"])
        (name, data), = want.items()
        self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 1, size)
        path = os.path.join(lower, name)
        st = os.stat(path)
        et.write_file(path + ".new", data)
        os.utime(path + ".new", ns=(st.st_atime_ns, st.st_mtime_ns))
        os.rename(path + ".new", path)
        self.assertNotEqual(os.stat(path).st_ino, st.st_ino)
        for _ in range(3):  # each open: lost, refilled, handed back
            fd = os.open(d.path(name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                self.assertEqual(os.pread(fd, size, 0), data)
            finally:
                os.close(fd)
            self.wait_kernel_tier(d, 1, size)
        st = d.stats()
        self.assert_stats_sane(st)
        # Each open's READ was a refill: not a hit.
        self.assertEqual((st["hits"], st["misses"], st["refills"], st["invalidations"]),
                         (0, 1, 3, 0), st)
        self.assertEqual(st["bytes_read_lower"], 4 * size, st)

    def lose_and_read_again(self, d, name, data, lost_off, lost_len, read_from=0):
        """Opens `name` (the kernel holds it whole), drops the kernel's pages
        of [lost_off, lost_off + lost_len) and reads the file again from
        `read_from` to its end through the same open, READs as asked (no
        read-ahead)."""
        fd = os.open(d.path(name), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            os.posix_fadvise(fd, lost_off, lost_len, os.POSIX_FADV_DONTNEED)
            return os.pread(fd, len(data) - read_from, read_from)
        finally:
            os.close(fd)

    def test_a_refill_reads_only_the_pieces_the_kernel_lost(self):
        # A file of 8 blocks of 1 MiB, handed over whole with a checksum per
        # piece of 256 KiB; the kernel loses 1.5 MiB from 3 MiB + 100 KiB.
        # Its next read reads the 7 pieces that hold those pages from LOWER
        # (1.75 MiB), not the blocks (2 MiB) nor the file (8 MiB), and the
        # kernel keeps the rest: the stub stays handed over, nothing goes
        # back into RAM.
        block = MiB
        piece = 256 * KiB
        size = 8 * block
        lower, want = self.dataset([size], seed=91)
        d = self.mount_one_copy(lower, ["cache.memory=64MiB", "cache.block_size=%d" % block])
        (name, data), = want.items()
        self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 1, size)
        before = d.stats()
        self.assertEqual(before["bytes_read_lower"], size, before)
        got = self.lose_and_read_again(d, name, data, 3 * block + 100 * KiB, 3 * block // 2)
        self.assertEqual(got, data)
        after = d.stats()
        self.assert_stats_sane(after)
        read = after["bytes_read_lower"] - before["bytes_read_lower"]
        # Pieces 12-18; a page the kernel reclaimed on its own meanwhile
        # may add a piece or two, never a block's worth of them.
        self.assertGreaterEqual(read, 7 * piece, after)
        self.assertLessEqual(read, 9 * piece,
                             "a refill read %d bytes from LOWER for 1.5 MiB the kernel lost "
                             "of a %d-byte file" % (read, size))
        self.assertEqual(read % piece, 0, after)
        self.assertEqual(after["refill_bytes"] - before["refill_bytes"], read, after)
        self.assertEqual(after["refills"] - before["refills"], 1, after)
        # The open was one access: a refill, not a hit.
        self.assertEqual((after["hits"] - before["hits"], after["misses"] - before["misses"]),
                         (0, 0), after)
        self.assertEqual(after["handovers"], before["handovers"], after)
        self.assertEqual(after["tiers"]["ram"], {"objects": 0, "bytes": 0}, after)
        self.wait_kernel_tier(d, 1, size)
        self.assertEqual(et.read_file(d.path(name)), data)

    def test_a_lost_page_of_a_shard_costs_a_piece_not_a_block(self):
        # A 16 MiB shard (the default cache.block_size, 4 MiB) handed over
        # whole; the kernel loses one page of it, as a proactive reclaim
        # (DAMON's pageout of cold page-cache pages) takes a few pages of a
        # file at a time. Its next read reads the 256 KiB piece that holds
        # the page from LOWER, not the 4 MiB block: a kernel that keeps
        # taking scattered pages costs one copy little, and the hand-over
        # gate (an eighth of the budget lost) stays open.
        piece = 256 * KiB
        size = 16 * MiB
        lower, want = self.dataset([size], seed=93)
        d = self.mount_one_copy(lower, ["cache.memory=128MiB"])
        (name, data), = want.items()
        self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 1, size)
        before = d.stats()
        got = self.lose_and_read_again(d, name, data, 5 * MiB + 8 * KiB, 4 * KiB)
        self.assertEqual(got, data)
        after = d.stats()
        self.assert_stats_sane(after)
        read = after["bytes_read_lower"] - before["bytes_read_lower"]
        # One piece; a page the kernel reclaimed on its own meanwhile may add
        # a piece or two, never a 4 MiB block.
        self.assertGreaterEqual(read, piece, after)
        self.assertLessEqual(read, 3 * piece,
                             "a refill read %d bytes from LOWER for one page the kernel lost "
                             "of a %d-byte file" % (read, size))
        self.assertEqual(read % piece, 0, after)
        self.assertEqual(after["refill_bytes"] - before["refill_bytes"], read, after)
        self.assertEqual(after["refills"] - before["refills"], 1, after)
        self.assertEqual(after["handovers"], before["handovers"], after)
        self.assertEqual(after["tiers"]["ram"], {"objects": 0, "bytes": 0}, after)

    def test_an_open_whose_read_needed_a_refill_is_a_refill_not_a_hit(self):
        # A job reads a whole file (256 KiB) and a file kept in blocks (4 MiB
        # in 1 MiB blocks) in epoch 0: misses, handed over. In epoch 1 each
        # open finds the file handed over (a hit at the open), then its pages
        # are dropped and read again: a refill, whole or of five pieces. Each
        # open counts once, as a refill and not a hit, in the stats, the
        # metrics, the job's status and the trace, which still replays.
        lower, want = self.dataset([256 * KiB, 4 * MiB], seed=74)
        names = sorted(want)
        trace = os.path.join(self.make_dir("out"), "policy.trace")
        d = self.mount(lower, opts=["fuse.one_copy=true", "cache.policy=future",
                                    "cache.memory=64MiB", "cache.block_size=%d" % MiB,
                                    "cache.prefetch=0", "trace.file=" + trace])
        jd = d.path(".epochfs", "jobs", "refill")
        os.mkdir(jd)  # registers this process
        for f, text in (("config", "batch_size = 1\nepochs = 2\n"),
                        ("samples", "".join(n + "\n" for n in names)),
                        ("order/0", "0 1\n"), ("order/1", "0 1\n"), ("epoch", "0\n")):
            with open(os.path.join(jd, f), "w") as fh:
                fh.write(text)
        for name in names:
            self.assertEqual(et.read_file(d.path(name)), want[name])
        self.wait_kernel_tier(d, 2, sum(len(v) for v in want.values()))
        with open(os.path.join(jd, "epoch"), "w") as fh:
            fh.write("1\n")
        before = d.stats()
        got = {}
        for name, (off, n) in zip(names, ((0, 256 * KiB), (MiB + 100 * KiB, MiB))):
            got[name] = self.lose_and_read_again(d, name, want[name], off, n)
        self.assertEqual(got, want)
        after = d.stats()
        self.assert_stats_sane(after)
        delta = {k: after[k] - before[k] for k in ("hits", "misses", "coalesced", "refills")}
        self.assertEqual(delta, {"hits": 0, "misses": 0, "coalesced": 0, "refills": 2}, after)
        read = after["bytes_read_lower"] - before["bytes_read_lower"]
        self.assertEqual(after["refill_bytes"] - before["refill_bytes"], read, after)
        self.assertGreaterEqual(read, 256 * KiB + 5 * 256 * KiB, after)
        with open(d.path(".epochfs", "metrics")) as fh:
            metrics = fh.read()
        for key, metric in (("hits", "epochfs_hits_total"), ("refills", "epochfs_refills_total")):
            m = re.search(r"^%s\{[^}]*\} (\d+)" % metric, metrics, re.M)
            self.assertIsNotNone(m, metric)
            self.assertEqual(int(m.group(1)), after[key], metric)
        with open(os.path.join(jd, "status")) as fh:
            status = json.load(fh)
        self.assertEqual((status["epoch"], status["hits"], status["misses"], status["refills"]),
                         (1, 0, 0, 2), status)
        self.assertEqual(d.unmount(), 0)
        with open(trace) as fh:
            events = [json.loads(line) for line in fh if line.strip()]
        refilled = [i for i, e in enumerate(events) if e["ev"] == "refilled"]
        self.assertEqual(len(refilled), 2, events)
        for i in refilled:  # each follows the hit of its open
            hit = [e for e in events[:i] if e["ev"] == "hit" and e["o"] == events[i]["o"]]
            self.assertTrue(hit, events[i])
        p = subprocess.run([et.epochfs_bin(), "sim", "--replay", trace, "--json"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        live = json.loads(p.stdout)["trace"]
        self.assertEqual((live["refills"], live["accesses"]), (2, 4), live)

    def test_a_block_refill_of_other_bytes_fails_with_estale(self):
        # One block changed on LOWER under the same size and mtime, where
        # the daemon does not look (under "immutable"; "open" sees the new
        # ctime at the next open and serves the new version whole): the
        # refill of pages the kernel lost in it finds other bytes than those
        # handed over (its block checksum) and fails, the kernel's pages of
        # the file dropped.
        block = MiB
        size = 4 * block
        lower, want = self.dataset([size], seed=92)
        d = self.mount_one_copy(lower, ["cache.memory=64MiB", "cache.block_size=%d" % block])
        (name, data), = want.items()
        self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 1, size)
        path = os.path.join(lower, name)
        st = os.stat(path)
        new = bytearray(data)
        new[2 * block:3 * block] = et.det_bytes(block, 93)
        with open(path, "r+b") as f:
            f.seek(2 * block)
            f.write(new[2 * block:3 * block])
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        # Pages lost in an unchanged block are refilled: its bytes are those
        # handed over.
        self.assertEqual(self.lose_and_read_again(d, name, data, block, block), data)
        # (Read from the lost range: a read from 0 would end short there.)
        with self.assertRaises(OSError) as cm:
            self.lose_and_read_again(d, name, data, 2 * block, block, read_from=2 * block)
        self.assertEqual(cm.exception.errno, errno.ESTALE)
        self.assertTrue(et.wait_for(lambda: et.cached_bytes(d.path(name)) == 0, WAIT),
                        "%d bytes of the old version left in the page cache"
                        % et.cached_bytes(d.path(name)))

    def test_the_memory_governor_counts_only_what_the_daemon_holds(self):
        # cache.memory = "auto": handed-over files are the kernel's page cache,
        # which the governor's sample counts as available already; its
        # `cache` (subtracted from the memory in use) is the daemon's bytes.
        lower, want = self.dataset([MiB] * 16, seed=80)
        d = self.mount_one_copy(lower, ["cache.memory=auto", "cache.governor_interval=0.05"])
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 16, 16 * MiB)
        ticks = d.stats()["governor"]["ticks"]
        # A sample taken after the hand-over (nothing is read meanwhile).
        self.assertTrue(et.wait_for(lambda: d.stats()["governor"]["ticks"] >= ticks + 2, WAIT),
                        d.stats()["governor"])
        st = d.stats()
        self.assertEqual(st["used"], 16 * MiB, st)
        self.assertEqual(st["governor"]["cache"], st["tiers"]["ram"]["bytes"], st["governor"])
        self.assertEqual(st["governor"]["cache"], 0, st["governor"])

    def shut_the_gate(self, d, lost):
        """Drops the kernel's pages of every file in `lost` (names to bytes,
        handed over, of several pieces) and reads them again: each is
        refilled from LOWER, in pieces while the gate is open, whole once it
        has shut (lost from its first page). Refills of an eighth of the
        budget or more shut the gate (16 MiB of a 64 MiB budget: shut for a
        minute, as the losses halve every 60 s)."""
        before = d.stats()
        et.drop_pages(d.path(n) for n in lost)
        for name, data in sorted(lost.items()):
            self.assertEqual(et.read_file(d.path(name)), data, name)
        after = d.stats()
        self.assert_stats_sane(after)
        total = sum(len(v) for v in lost.values())
        self.assertEqual(after["refills"] - before["refills"], len(lost), after)
        self.assertEqual(after["bytes_read_lower"] - before["bytes_read_lower"], total, after)
        self.assertEqual(after["refill_bytes"] - before["refill_bytes"], total, after)
        self.assertEqual(after["handovers"], before["handovers"], after)

    def test_a_kernel_that_keeps_losing_pages_gets_the_daemons_copy(self):
        # 16 files of 1 MiB through a 64 MiB budget, handed over, then lost
        # by the kernel (all of them, as a drop_caches does) and read again:
        # each is refilled from LOWER (in pieces of 256 KiB, the stub staying
        # the kernel's), and once the refills reach an eighth of the budget
        # (8 MiB) the daemon refills the rest whole and keeps its copy. Lost
        # again, those are answered from RAM: LOWER gives only the few the
        # kernel still held.
        lower, want = self.dataset([MiB] * 16, seed=62)
        d = self.mount_one_copy(lower, ["cache.memory=64MiB"])
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        self.wait_kernel_tier(d, 16, 16 * MiB)
        handovers = d.stats()["handovers"]
        kept = None  # files the kernel still held after the first loss
        for lost in (1, 2):
            before = d.stats()
            et.drop_pages(d.path(n) for n in want)
            for name, data in sorted(want.items()):
                self.assertEqual(et.read_file(d.path(name)), data, name)
            after = d.stats()
            self.assert_stats_sane(after)
            read = after["bytes_read_lower"] - before["bytes_read_lower"]
            refills = after["refills"] - before["refills"]
            self.assertEqual(read, after["refill_bytes"] - before["refill_bytes"], after)
            # Nothing is handed over again: a refill in pieces leaves the
            # stub handed over, a whole one keeps the daemon's copy.
            self.assertEqual(after["handovers"], handovers, after)
            if lost == 1:
                # Every file read again from LOWER; the kernel's until 8 MiB
                # were refilled (8 or 9 of them: the losses decay meanwhile).
                self.assertEqual((refills, read), (16, 16 * MiB), after)
                kept = after["tiers"]["kernel"]["objects"]
                self.assertIn(kept, (8, 9), after)
                self.assertEqual(after["tiers"]["ram"],
                                 {"objects": 16 - kept, "bytes": (16 - kept) * MiB}, after)
            else:  # those in RAM are served from it; only the kernel's are read
                self.assertEqual((refills, read), (kept, kept * MiB), after)
                self.assertEqual(after["tiers"]["ram"], {"objects": 16, "bytes": 16 * MiB},
                                 after)
            self.assertEqual(after["used"], 16 * MiB, after)

    def test_while_the_gate_is_shut_a_first_loss_costs_its_pieces_a_second_the_file(self):
        # 16 files of one 1 MiB block lost and refilled (16 MiB: the gate
        # shuts at 8 MiB, and stays shut for a minute), then the kernel loses
        # 4.5 MiB of a file of 8 blocks (not its start), three times. The
        # first time, its next read reads the 19 pieces of 256 KiB that hold
        # those pages from LOWER, as with the gate open, not the whole file;
        # the stub stays handed over. The second time (its pieces have cost
        # half of it) the file is read back whole and the daemon keeps it;
        # the third reads nothing from LOWER.
        block = MiB
        piece = 256 * KiB
        lower, want = self.dataset([block] * 16 + [8 * block], seed=63)
        d = self.mount_one_copy(lower, ["cache.memory=64MiB", "cache.block_size=%d" % block])
        big = max(want, key=lambda n: len(want[n]))
        small = sorted(n for n in want if n != big)
        for name in small + [big]:
            self.assertEqual(et.read_file(d.path(name)), want[name])
        self.wait_kernel_tier(d, 17, 24 * block)
        handovers = d.stats()["handovers"]
        self.shut_the_gate(d, {n: want[n] for n in small})
        for lost in (1, 2, 3):
            before = d.stats()
            got = self.lose_and_read_again(d, big, want[big], 3 * block + 100 * KiB,
                                           9 * block // 2)
            self.assertEqual(got, want[big])
            after = d.stats()
            self.assert_stats_sane(after)
            read = after["bytes_read_lower"] - before["bytes_read_lower"]
            self.assertEqual(after["refill_bytes"] - before["refill_bytes"], read, after)
            self.assertEqual(after["handovers"], handovers, after)
            self.assertEqual(after["refills"] - before["refills"], 1 if lost < 3 else 0, after)
            ram = after["tiers"]["ram"]["bytes"] - before["tiers"]["ram"]["bytes"]
            if lost == 1:
                # Pieces 12-30; a page the kernel reclaimed on its own
                # meanwhile may add a piece or two, never the file (8 MiB).
                self.assertGreaterEqual(read, 19 * piece, after)
                self.assertLessEqual(read, 21 * piece,
                                     "a first loss while the gate was shut read %d bytes "
                                     "from LOWER for 4.5 MiB" % read)
                self.assertEqual(read % piece, 0, after)
                self.assertEqual(ram, 0, after)  # the kernel keeps the rest
            elif lost == 2:  # whole, and kept
                self.assertEqual(read, 8 * block, "a second loss: %r" % after)
                self.assertEqual(ram, 8 * block, after)
            else:  # from the daemon's copy
                self.assertEqual(read, 0, "a third loss read LOWER: %r" % after)
                self.assertEqual(ram, 0, after)

    def test_one_copy_off_keeps_the_daemons_copy(self):
        lower, want = self.dataset([MiB + i for i in range(16)], seed=61)
        d = self.mount(lower, opts=["cache.memory=256MiB", "cache.policy=lru",
                                    "fuse.one_copy=false"])
        rss0 = et.rss_bytes(d.proc.pid)
        for name, data in want.items():
            self.assertEqual(et.read_file(d.path(name)), data)
        st = d.stats()
        total = sum(len(v) for v in want.values())
        self.assertEqual((st["handovers"], st["tiers"]["kernel"]["objects"]), (0, 0), st)
        self.assertEqual(st["tiers"]["ram"], {"objects": 16, "bytes": total}, st)
        self.assertGreater(et.rss_bytes(d.proc.pid) - rss0, total // 2)


if __name__ == "__main__":
    et.main()
