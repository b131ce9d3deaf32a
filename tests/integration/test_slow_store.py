"""A slow store: a hit costs LOWER nothing, and cached files are served while
LOWER hangs or fails (store/known_lower.h, store/lower_health.h).

LOWER is the faultfs fixture, which counts every call it serves by kind (the
extended attribute user.faultfs.counts of its root) and, on command, hangs
(SOURCE/.hang_all) or fails (SOURCE/.fail_all) every call. The daemon counts
its own LOWER calls by kind in `stats` (lower_calls_by_kind): both counts
must stay still across hot opens, stats, reads and listings, also after the
kernel's entry and attribute timeouts have passed. Before, each hot open
looked its file up and stat'ed it on LOWER once those timeouts passed, and a
hung LOWER made every cached file wait for lower.timeout and fail."""
import errno
import os
import time
import unittest

import epochfs_test as et
from test_faults import run_with_bound

KiB = 1024


def fixture_counts(faultmnt):
    text = os.getxattr(faultmnt, "user.faultfs.counts").decode()
    return dict((k, int(v)) for k, v in (kv.split("=") for kv in text.split()))


class SlowStoreTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.src = self.make_dir("src")
        self.files = {}
        for d in ("a", "b/c"):
            os.makedirs(os.path.join(self.src, d))
            for i in range(6):
                rel = "%s/f%d.bin" % (d, i)
                self.files[rel] = et.det_bytes(3000 + 1111 * i, hash(rel) & 0xffff)
                et.write_file(os.path.join(self.src, rel), self.files[rel])
        self.cold = et.det_bytes(70 * KiB, 99)
        et.write_file(os.path.join(self.src, "cold.bin"), self.cold)
        self.faultmnt = self.mount_faultfs(self.src)
        for flag in (".hang_all", ".fail_all"):
            p = os.path.join(self.src, flag)
            # Runs first (cleanups are LIFO): lets every stuck call finish.
            self.addCleanup(lambda p=p: os.path.exists(p) and os.unlink(p))

    def walk(self, d):
        """Lists every directory, stats and reads every cached file."""
        for top in ("", "a", "b", "b/c"):
            os.listdir(d.path(top) if top else d.mnt)
        for rel, data in sorted(self.files.items()):
            self.assertEqual(os.stat(d.path(rel)).st_size, len(data), rel)
            self.assertEqual(et.read_file_raw(d.path(rel)), data, rel)

    def still(self, d, passes=2):
        """Walks `passes` times, each after the kernel's timeouts (0.2 s) have
        passed; returns what LOWER saw meanwhile, per the fixture and per the
        daemon."""
        fixture, daemon = fixture_counts(self.faultmnt), d.stats()["lower_calls_by_kind"]
        for _ in range(passes):
            time.sleep(0.5)
            self.walk(d)
        after_f, after_d = fixture_counts(self.faultmnt), d.stats()["lower_calls_by_kind"]
        return ({k: after_f[k] - fixture[k] for k in fixture if after_f[k] != fixture[k]},
                {k: after_d[k] - daemon[k] for k in daemon if after_d[k] != daemon[k]})

    def mount_short(self, *more):
        return self.mount(self.faultmnt, opts=["fuse.attr_timeout=0.2", "fuse.entry_timeout=0.2",
                                               "lower.timeout=2", *more])

    def test_hot_opens_stats_reads_and_listings_reach_no_lower(self):
        d = self.mount_short()
        self.walk(d)  # cold: loads and remembers
        self.walk(d)
        st = d.stats()
        self.assertGreater(st["lower_calls_by_kind"]["lookup"], 0, st)
        self.assertGreater(st["lower_calls_by_kind"]["open"], 0, st)
        fixture, daemon = self.still(d)
        self.assertEqual(fixture, {}, "LOWER calls (the fixture's count) in hot passes")
        self.assertEqual(daemon, {}, "LOWER calls (the daemon's count) in hot passes")
        self.assertGreater(d.stats()["known_answers"], 0)

    def test_without_memory_of_lower_hot_passes_reach_it(self):
        # The same walk with cache.metadata_entries = 0: lookups and stats
        # reach LOWER again once the kernel's timeouts pass (what the test
        # above would see without KnownLower).
        d = self.mount_short("cache.metadata_entries=0")
        self.walk(d)
        fixture, daemon = self.still(d, passes=1)
        self.assertGreater(fixture.get("stat", 0), 0, fixture)
        self.assertGreater(daemon.get("lookup", 0) + daemon.get("stat", 0), 0, daemon)

    def check_cached_served(self, d, flag, cold_errno):
        et.write_file(os.path.join(self.src, flag), b"")

        def read_all():
            self.walk(d)
        for _ in range(2):
            time.sleep(0.5)  # past the kernel's timeouts: the daemon answers
            self.assertEqual(run_with_bound(read_all, 30 * et.TIME_SCALE), 0,
                             "cached files while LOWER %s" % flag)
        # An uncached file fails as it does without KnownLower, and LOWER is down.
        self.assertEqual(run_with_bound(lambda: et.read_file_raw(d.path("cold.bin")),
                                        60 * et.TIME_SCALE), cold_errno)
        st = d.stats()
        self.assertTrue(st["lower_down"], st)
        self.assertIn("LOWER is down", d.stderr_text())
        os.unlink(os.path.join(self.src, flag))
        self.assertEqual(et.read_file_raw(d.path("cold.bin")), self.cold)
        self.assertFalse(d.stats()["lower_down"])
        self.assertIn("LOWER answers again", d.stderr_text())

    def test_cached_files_are_served_while_lower_hangs(self):
        d = self.mount_short()
        self.walk(d)
        self.check_cached_served(d, ".hang_all", errno.ETIMEDOUT)
        self.assertTrue(d.alive())

    def test_cached_files_are_served_while_lower_fails(self):
        d = self.mount_short()
        self.walk(d)
        self.check_cached_served(d, ".fail_all", errno.EIO)
        self.assertTrue(d.alive())

    def test_a_shared_mount_rechecks_once_per_permission_timeout(self):
        # allow_other: the kernel's timeouts are bounded by
        # fuse.permission_timeout (1 s here), and past it the daemon stats
        # each file once on LOWER: while LOWER hangs the last known
        # attributes stand, and the cached files still read.
        d = self.mount(self.faultmnt, opts=["allow_other", "fuse.permission_timeout=1",
                                            "lower.timeout=2"])
        self.walk(d)
        fixture, _ = self.still(d, passes=1)  # within the second: from memory
        time.sleep(1.5)
        # The daemon's count: the fixture sees a stat of "b/c/f0.bin" as three
        # lookups, one per component.
        calls = lambda: d.stats()["lower_calls_by_kind"]  # noqa: E731
        before = calls()
        self.walk(d)
        after = calls()
        rechecks = after["lookup"] + after["stat"] - before["lookup"] - before["stat"]
        paths = len(self.files) + 4  # the files, a, b, b/c and the root
        self.assertLessEqual(rechecks, paths, "at most one stat per path and bound")
        self.assertEqual(after["open"], before["open"], "no file opened on LOWER")
        self.assertEqual(after["read"], before["read"], "no file read on LOWER")
        self.assertGreater(rechecks, 0, "past the bound, attributes are checked again")
        et.write_file(os.path.join(self.src, ".hang_all"), b"")
        time.sleep(1.5)

        def read_all():
            self.walk(d)
        self.assertEqual(run_with_bound(read_all, 30 * et.TIME_SCALE), 0)
        self.assertEqual(run_with_bound(read_all, 30 * et.TIME_SCALE), 0)
        self.assertTrue(d.stats()["lower_down"])
        self.assertGreater(d.stats()["known_last_known"], 0)
        self.assertTrue(d.alive())


if __name__ == "__main__":
    unittest.main()
