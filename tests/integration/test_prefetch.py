#!/usr/bin/python3
"""Prefetch of the declared future (cache.prefetch, policy "future") on a real
mount over faultfs (a passthrough LOWER whose reads of *HANG* files block while
SOURCE/.hang exists):

- a job declares its order and reads nothing: the daemon loads every file the
  budget holds, soonest first, before any read; the reads are then all hits,
  each file was read from LOWER once, byte-exact;
- a reader who asks for a file while its prefetch is in flight joins that load
  (the file is read from LOWER once, the reader gets its bytes);
- a reader's miss never waits behind a prefetch: with the one prefetch load
  stuck in a hung LOWER read on prefetch's own worker, the reader's one
  worker still reads every other file;
- with cache.prefetch = 1 no prefetch starts while a reader's LOWER read is
  in flight, and all start once it answers; with 2 they run beside it;
- with a budget smaller than the dataset, what is prefetched stays within it;
- samples that cannot be loaded (missing, a directory) are reported in the
  job's status once each and the prefetch goes on past them;
- with a budget too small for the declared files, their attributes are
  fetched ahead instead (under "immutable"; under "open" none are): the
  reader's lookups and stats then ask LOWER nothing (the fixture's counts),
  and the reads are byte-exact;
- a file that changed between the lookup of its load's path walk and its
  open (the fixture holds the open: SOURCE/.hang_open) is read again within
  that load, one open of LOWER;
- a reader who joins a prefetch LOWER does not answer gets ETIMEDOUT after
  lower.timeout, as for a call of its own;
- a prefetch stuck in a hung LOWER does not hold the unmount (the daemon
  stops every part within the test's exit bound, lower.timeout being far
  longer).

Nothing here depends on timing: every wait is for a state the daemon must
reach (et.wait_for with a long bound), every check on counters and bytes
(one check that nothing starts gives the daemon a second to look: under load
it can only miss a regression, never fail a correct daemon).
"""

import errno
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs_test as et  # noqa: E402
import epochfs.sampler  # noqa: E402

KiB = 1024
SIZE = 32 * KiB
WAIT = 120 * et.TIME_SCALE


class PrefetchTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.src = self.make_dir("src")
        self.flag = os.path.join(self.src, ".hang")
        # Runs first (cleanups are LIFO): lets every stuck call finish.
        self.addCleanup(lambda: os.path.exists(self.flag) and os.unlink(self.flag))

    def dataset(self, names):
        want = {}
        for i, name in enumerate(names):
            want[name] = et.det_bytes(SIZE + 97 * i, 300 + i)
            et.write_file(os.path.join(self.src, "data", name), want[name])
        return want

    def job(self, d, names, order, epochs=2, name="pf"):
        paths = [d.path("data", n) for n in names]
        sampler = epochfs.sampler.EpochfsSampler(list(range(len(names))), d.mnt, name, paths, 1,
                                                 epochs, order_fn=lambda e: order, compute_ms=0,
                                                 strict=True)
        return sampler, paths

    def test_declared_files_are_loaded_before_they_are_read(self):
        names = ["f%02d.bin" % i for i in range(24)]
        want = self.dataset(names)
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=3",
                             "cache.memory=%d" % (64 * SIZE)])
        order = list(reversed(range(len(names))))
        sampler, paths = self.job(d, names, order)
        it = iter(sampler)  # declares epochs 0 and 1: nothing read yet
        self.assertTrue(et.wait_for(lambda: d.stats()["prefetched"] == len(names), WAIT),
                        d.stats())
        st = d.stats()
        self.assertEqual(st["misses"] + st["hits"], 0, st)
        self.assertEqual(st["prefetch_bytes"], sum(len(v) for v in want.values()), st)
        for k in it:
            self.assertEqual(et.read_file_raw(paths[k]), want[names[k]], names[k])
        st = d.stats()
        self.assertEqual((st["hits"], st["misses"]), (len(names), 0), st)
        self.assertEqual(st["prefetch_hits"], len(names), st)
        self.assertEqual(st["prefetch_wasted"], 0, st)
        self.assertEqual(st["bytes_read_lower"], sum(len(v) for v in want.values()), st)
        job = [j for j in st["jobs"] if j["name"] == "pf"][0]
        self.assertEqual((job["hits"], job["misses"]), (len(names), 0), job)
        sampler.close()
        self.assertTrue(d.alive())

    def test_a_reader_joins_the_prefetch_in_flight(self):
        names = ["a_HANG.bin"] + ["f%02d.bin" % i for i in range(5)]
        want = self.dataset(names)
        et.write_file(self.flag, b"")
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=1", "lower.workers=4",
                             "cache.memory=%d" % (64 * SIZE)])
        sampler, paths = self.job(d, names, list(range(len(names))))
        iter(sampler)
        # The first file in the order is the first prefetched: its read hangs.
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        self.assertEqual(d.stats()["prefetched"], 0)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            ok = et.read_file_raw(paths[0]) == want[names[0]]
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.close(w)
        self.assertTrue(et.wait_for(lambda: d.stats()["coalesced"] >= 1, WAIT), d.stats())
        os.unlink(self.flag)  # LOWER answers: one read serves both
        self.assertEqual(os.read(r, 1), b"1")
        os.close(r)
        os.waitpid(pid, 0)
        st = d.stats()
        self.assertEqual(st["misses"], 0, st)
        # It waited for the prefetch: a joined load, not a hit.
        self.assertEqual(st["hits"], 0, st)
        self.assertEqual(st["coalesced"], 1, st)
        self.assertEqual(st["prefetch_hits"], 1, st)
        self.assertEqual(st["bytes_read_lower"] - st["prefetch_bytes"], 0, st)
        for k in range(len(names)):
            self.assertEqual(et.read_file_raw(paths[k]), want[names[k]], names[k])
        st = d.stats()
        self.assertEqual(st["bytes_read_lower"], sum(len(v) for v in want.values()), st)
        self.assertEqual(st["misses"] + st["prefetched"], len(names), st)
        sampler.close()

    def test_a_readers_miss_does_not_wait_behind_a_prefetch(self):
        names = ["a_HANG.bin"] + ["f%02d.bin" % i for i in range(5)]
        want = self.dataset(names)
        et.write_file(self.flag, b"")
        # One prefetch load on its one worker (stuck below in the hung file),
        # one LOWER worker for the readers: their misses never queue behind it.
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=1", "lower.workers=1",
                             "lower.timeout=60", "cache.memory=%d" % (64 * SIZE)])
        sampler, paths = self.job(d, names, list(range(len(names))))
        iter(sampler)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        for k in range(1, len(names)):
            self.assertEqual(et.read_file_raw(paths[k]), want[names[k]], names[k])
        st = d.stats()
        self.assertEqual(st["prefetched"], 0, st)  # the slot is still stuck
        self.assertEqual(st["misses"], len(names) - 1, st)
        self.assertEqual(st["lower_timeouts"], 0, st)
        os.unlink(self.flag)
        self.assertEqual(et.read_file_raw(paths[0]), want[names[0]])
        sampler.close()

    def test_a_reader_joined_to_a_hung_prefetch_gets_etimedout(self):
        # The reader asks for the file whose prefetch LOWER does not answer:
        # it joins that load, and after lower.timeout it is answered
        # (ETIMEDOUT), while the prefetch thread is still in LOWER.
        names = ["a_HANG.bin", "f00.bin"]
        self.dataset(names)
        et.write_file(self.flag, b"")
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=1", "lower.timeout=1",
                             "cache.memory=%d" % (64 * SIZE)])
        sampler, paths = self.job(d, names, list(range(len(names))))
        iter(sampler)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        got = []

        def read():
            try:
                et.read_file_raw(paths[0])
                got.append(0)
            except OSError as e:
                got.append(e.errno)
        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(30 * et.TIME_SCALE)
        self.assertEqual(got, [errno.ETIMEDOUT], d.stats())
        self.assertGreaterEqual(d.stats()["lower_timeouts"], 1)
        os.unlink(self.flag)  # the stuck calls finish: the daemon can exit
        sampler.close()

    def test_a_prefetch_stuck_in_a_hung_lower_does_not_hold_the_unmount(self):
        # The prefetch load runs on its prefetch thread (no gate worker); LOWER
        # does not answer it, and lower.timeout is far past the exit bound:
        # the unmount lets the thread go and stops every part ("unmounted" in
        # the log). The process itself ends once LOWER answers: a thread in a
        # FUSE request its server has taken cannot be killed (a gate worker
        # stuck there holds the exit the same way).
        names = ["a_HANG.bin", "f00.bin"]
        self.dataset(names)
        et.write_file(self.flag, b"")
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=1", "lower.timeout=600",
                             "cache.memory=%d" % (64 * SIZE)])
        sampler, paths = self.job(d, names, list(range(len(names))))
        iter(sampler)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        sampler.close()
        r = subprocess.run(["fusermount3", "-u", d.mnt], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(et.wait_for(lambda: "unmounted " + d.mnt in d.stderr_text(),
                                    10.0), d.stderr_text()[-2000:])
        os.unlink(self.flag)
        self.assertEqual(d.wait_exit(), 0, d.stderr_text()[-2000:])

    def prefetch_beside_a_hung_reader(self, depth):
        """A reader's LOWER read hangs (a file outside the job), then a job
        declares 5 files. Returns the mount, the job and its paths while the
        reader is still stuck, and a function that lets it finish."""
        names = ["f%02d.bin" % i for i in range(5)]
        want = self.dataset(names)
        stuck = et.det_bytes(SIZE, 99)
        et.write_file(os.path.join(self.src, "r_HANG.bin"), stuck)
        et.write_file(self.flag, b"")
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=%d" % depth,
                             "lower.workers=4", "cache.memory=%d" % (64 * SIZE)])
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            ok = et.read_file_raw(d.path("r_HANG.bin")) == stuck
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.close(w)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        sampler, paths = self.job(d, names, list(range(len(names))))
        iter(sampler)  # declares epochs 0 and 1

        def finish():
            os.unlink(self.flag)
            self.assertEqual(os.read(r, 1), b"1")
            os.close(r)
            os.waitpid(pid, 0)
        return d, sampler, paths, want, names, finish

    def test_prefetch_1_only_fills_an_idle_store(self):
        # cache.prefetch = 1 (for a store whose bandwidth one read fills): no
        # prefetch starts beside the stuck reader's read; once it answers,
        # the declared files are all prefetched.
        d, sampler, paths, want, names, finish = self.prefetch_beside_a_hung_reader(1)
        # The prefetcher looks at every declaration and every 100 ms: give it
        # time to look (this can only miss a regression, never fail wrongly).
        time.sleep(1.0)
        st = d.stats()
        self.assertEqual((st["prefetched"], st["prefetch_bytes"]), (0, 0), st)
        finish()
        self.assertTrue(et.wait_for(lambda: d.stats()["prefetched"] == len(names), WAIT),
                        d.stats())
        for k in range(len(names)):
            self.assertEqual(et.read_file_raw(paths[k]), want[names[k]], names[k])
        st = d.stats()
        self.assertEqual((st["prefetch_hits"], st["misses"]), (len(names), 1), st)
        sampler.close()

    def test_a_deeper_prefetch_runs_beside_the_readers(self):
        # cache.prefetch = 2: one reader's read in flight leaves a slot, so the
        # declared files are prefetched while it is still stuck.
        d, sampler, paths, want, names, finish = self.prefetch_beside_a_hung_reader(2)
        self.assertTrue(et.wait_for(lambda: d.stats()["prefetched"] == len(names), WAIT),
                        d.stats())
        self.assertGreaterEqual(d.stats()["lower_in_flight"], 1)  # the reader's, still stuck
        finish()
        for k in range(len(names)):
            self.assertEqual(et.read_file_raw(paths[k]), want[names[k]], names[k])
        st = d.stats()
        self.assertEqual(st["prefetch_hits"], len(names), st)
        sampler.close()

    def test_unreadable_samples_are_reported_once_and_skipped(self):
        # The samples list is taken unchecked (only its directories are):
        # a missing file and a directory among the samples are found when the
        # prefetch goes to load them, reported in the job's status, and the
        # rest of the order is prefetched past them.
        names = ["f%02d.bin" % i for i in range(6)]
        want = self.dataset(names)
        os.mkdir(os.path.join(self.src, "data", "sub"))
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=2",
                             "cache.memory=%d" % (64 * SIZE)])
        all_names = names[:2] + ["gone.bin"] + names[2:4] + ["sub"] + names[4:]
        sampler, paths = self.job(d, all_names, list(range(len(all_names))))
        it = iter(sampler)
        self.assertTrue(et.wait_for(lambda: d.stats()["prefetched"] == len(names), WAIT),
                        d.stats())

        def status():
            with open(d.path(".epochfs", "jobs", "pf", "status"), "rb") as f:
                return json.loads(f.read().decode())
        self.assertTrue(et.wait_for(lambda: status()["unreadable_samples"] == 2, WAIT), status())
        # The first one found, by whichever of the two prefetch workers got
        # there first: the missing file or the directory.
        first = status()["first_unreadable"]
        self.assertTrue(("sample 2" in first and "gone.bin" in first) or
                        ("sample 5" in first and "data/sub: not a regular file" in first), first)
        for k in it:
            if all_names[k] in want:
                self.assertEqual(et.read_file_raw(paths[k]), want[all_names[k]], all_names[k])
            else:
                with self.assertRaises(OSError):
                    et.read_file_raw(paths[k])
        st = d.stats()
        self.assertEqual(st["bytes_read_lower"], sum(len(v) for v in want.values()), st)
        self.assertEqual(st["prefetch_hits"], len(names), st)
        self.assertEqual(status()["unreadable_samples"], 2, "reported once each")
        self.assertIn("gone.bin", d.stderr_text())
        sampler.close()
        self.assertTrue(d.alive())

    def test_a_sample_too_large_to_cache_whole_is_read_in_blocks_not_unreadable(self):
        # A shard larger than a quarter of the budget among the samples: never
        # prefetched (the rest are), not reported unreadable, read byte-exact
        # in blocks (nothing streamed uncached), the blocks under the job's
        # declared future.
        names = ["f%02d.bin" % i for i in range(4)]
        want = self.dataset(names)
        big = et.det_bytes(40 * SIZE + 123, 99)  # > 64 * SIZE / 4
        et.write_file(os.path.join(self.src, "data", "shard.tar"), big)
        want["shard.tar"] = big
        all_names = names[:2] + ["shard.tar"] + names[2:]
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=2",
                             "cache.memory=%d" % (64 * SIZE), "cache.block_size=64KiB"])
        sampler, paths = self.job(d, all_names, list(range(len(all_names))))
        it = iter(sampler)
        self.assertTrue(et.wait_for(lambda: d.stats()["prefetched"] == len(names), WAIT),
                        d.stats())
        for k in it:
            self.assertEqual(et.read_file_raw(paths[k]), want[all_names[k]], all_names[k])
        with open(d.path(".epochfs", "jobs", "pf", "status"), "rb") as f:
            status = json.loads(f.read().decode())
        self.assertEqual((status["unreadable_samples"], status["first_unreadable"]), (0, None),
                         status)
        # The shard's blocks are the job's: its position moved once for the
        # shard (5 samples read, not 5 + its 21 blocks), each block is one of
        # its hits or misses, and every byte held is held for its next epoch.
        blocks = -(-len(big) // (64 * KiB))
        self.assertEqual(status["batch"], len(all_names), status)
        self.assertGreaterEqual(status["hits"] + status["misses"], len(names) + blocks, status)
        self.assertEqual(status["cur_bytes"], sum(len(v) for v in want.values()), status)
        st = d.stats()
        self.assertEqual((st["streamed_opens"], st["streamed_bytes"]), (0, 0), st)
        self.assertEqual(st["prefetched"], len(names), st)
        self.assertEqual(st["bytes_read_lower"], sum(len(v) for v in want.values()), st)
        sampler.close()
        self.assertTrue(d.alive())

    def test_prefetch_stays_within_a_small_budget(self):
        names = ["f%02d.bin" % i for i in range(40)]
        want = self.dataset(names)
        budget = 10 * SIZE
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=4",
                             "cache.memory=%d" % budget])
        order = list(range(len(names)))
        sampler, paths = self.job(d, names, order, epochs=3)
        for _ in range(3):
            for k in sampler:
                self.assertEqual(et.read_file_raw(paths[k]), want[names[k]], names[k])
                st = d.stats()
                self.assertLessEqual(st["used"], budget, st)
                self.assertLessEqual(st["resident"], budget, st)
        st = d.stats()
        self.assertEqual(st["hits"] + st["misses"] + st["coalesced"] + st["refills"],
                         3 * len(names), st)
        # Every file prefetched and kept was read since, is still held
        # unread, or was counted wasted.
        unread = st["prefetched"] - st["prefetch_hits"] - st["prefetch_wasted"]
        self.assertGreaterEqual(unread, 0, st)
        self.assertLessEqual(unread, st["objects"], st)
        sampler.close()
        self.assertTrue(d.alive())

    def daemon_counts(self, faultmnt, d):
        """The fixture's counts of the daemon's calls by kind."""
        text = os.getxattr(faultmnt, "user.faultfs.counts.%d" % d.proc.pid).decode()
        return dict((k, int(v)) for k, v in (kv.split("=") for kv in text.split()))

    def test_files_the_budget_cannot_hold_have_their_attributes_fetched_ahead(self):
        names = ["f%02d.bin" % i for i in range(16)]
        want = self.dataset(names)
        faultmnt = self.mount_faultfs(self.src)
        # Room for four files (each is cached whole: a quarter of the budget
        # is more than the largest): the other twelve are never loaded ahead.
        d = self.mount(faultmnt, opts=["cache.policy=future", "cache.prefetch=4",
                                       "cache.memory=%d" % (5 * SIZE)])
        order = list(reversed(range(len(names))))
        sampler, paths = self.job(d, names, order, epochs=1)
        it = iter(sampler)  # declares the epoch; nothing read yet

        def quiet():  # every name loaded or stat'ed ahead, nothing in flight
            st = d.stats()
            return (st["prefetched"] >= 1 and st["stat_ahead"] + st["prefetched"] >= len(names)
                    and st["lower_in_flight"] == 0)
        self.assertTrue(et.wait_for(quiet, WAIT), d.stats())
        st = d.stats()
        self.assertLessEqual(st["prefetched"], 4, st)
        self.assertGreaterEqual(st["stat_ahead"], len(names) - 4, st)
        os.stat(d.path("data"))  # the directory: not a declared file
        before, calls = self.daemon_counts(faultmnt, d), d.stats()["lower_calls"]
        for p, n in zip(paths, names):  # the reader's lookups and stats, in a fresh kernel
            self.assertEqual(os.stat(p).st_size, len(want[n]), n)
        after = self.daemon_counts(faultmnt, d)
        self.assertEqual({k: after[k] - before[k] for k in after
                          if k != "max_in_flight" and after[k] != before[k]}, {},
                         "the reader's lookups reached LOWER")
        self.assertEqual(d.stats()["lower_calls"], calls, d.stats())
        for k in it:
            self.assertEqual(et.read_file_raw(paths[k]), want[names[k]], names[k])
        sampler.close()
        self.assertTrue(d.alive())

    def test_under_open_nothing_is_stat_ahead(self):
        names = ["f%02d.bin" % i for i in range(8)]
        want = self.dataset(names)
        d = self.mount(self.mount_faultfs(self.src),
                       opts=["cache.policy=future", "cache.prefetch=2", "cache.consistency=open",
                             "cache.memory=%d" % (5 * SIZE)])
        sampler, paths = self.job(d, names, list(range(len(names))), epochs=1)
        it = iter(sampler)
        self.assertTrue(et.wait_for(lambda: d.stats()["prefetched"] >= 1, WAIT), d.stats())
        for k in it:
            self.assertEqual(et.read_file_raw(paths[k]), want[names[k]], names[k])
        self.assertEqual(d.stats()["stat_ahead"], 0, d.stats())
        sampler.close()

    def test_a_file_changed_between_its_lookup_and_its_load_is_read_again_once(self):
        # The load's open hangs (the fixture's .hang_open) after the path walk
        # looked the file up; the file grows meanwhile: the size the kernel
        # holds from that lookup is not the file's. The load asks LOWER again
        # and reads the file once more within the same open.
        name = "a_HANG.bin"
        old, new = et.det_bytes(SIZE, 1), et.det_bytes(SIZE + 500, 2)
        rel = os.path.join(self.src, "data", name)
        et.write_file(rel, old)
        hang_open = os.path.join(self.src, ".hang_open")
        et.write_file(hang_open, b"")
        self.addCleanup(lambda: os.path.exists(hang_open) and os.unlink(hang_open))
        faultmnt = self.mount_faultfs(self.src)
        d = self.mount(faultmnt, opts=["cache.policy=future", "cache.prefetch=1",
                                       "cache.memory=%d" % (64 * SIZE)])
        sampler, paths = self.job(d, [name], [0], epochs=1)
        it = iter(sampler)
        self.assertTrue(et.wait_for(lambda: self.daemon_counts(faultmnt, d)["open"] >= 1
                                    and d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        with open(rel, "r+b") as f:  # in place: the inode the open will reach
            f.write(new)
        os.unlink(hang_open)
        self.assertTrue(et.wait_for(lambda: d.stats()["prefetched"] == 1, WAIT), d.stats())
        self.assertEqual(self.daemon_counts(faultmnt, d)["open"], 1, "the load was tried again")
        self.assertEqual(d.stats()["prefetch_bytes"], len(new), d.stats())
        for k in it:
            self.assertEqual(et.read_file_raw(paths[k]), new)
        st = d.stats()
        self.assertEqual((st["hits"], st["misses"]), (1, 0), st)
        sampler.close()
        self.assertTrue(d.alive())

if __name__ == "__main__":
    et.main()
