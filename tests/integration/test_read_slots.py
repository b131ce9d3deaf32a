#!/usr/bin/python3
"""Which readers' misses read LOWER first (lower.read_slots), on a real mount
over faultfs (a passthrough LOWER whose reads of *HANG* files block while
SOURCE/.hang exists). Each job is a forked process with its own
EpochfsSampler (its pid registered), reading in its declared order; job
"near" has 2 reads left, job "far" 50, so "near" is first in line.

- "far"'s load stuck in LOWER: "near"'s miss starts at once (read_waits 0);
- "near"'s load stuck in LOWER: "far"'s miss waits its turn, and, as the
  stuck load never ends, starts when it has waited its longest (read_aged);
- with lower.read_slots = 0 it starts at once;
- unregistered readers (all first in line) never wait;
- one job alone never waits for its own loads, though its key rose since
  they asked (a large file raised its mean read size).
Every read is checked byte for byte.

Nothing here depends on timing: every wait is for a state the daemon must
reach (et.wait_for with a long bound), every check on counters and bytes.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs_test as et  # noqa: E402
import epochfs.sampler  # noqa: E402

KiB = 1024
SIZE = 32 * KiB
WAIT = 120 * et.TIME_SCALE


class ReadSlotsTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.src = self.make_dir("src")
        self.flag = os.path.join(self.src, ".hang")
        # Runs first (cleanups are LIFO): lets every stuck call finish.
        self.addCleanup(lambda: os.path.exists(self.flag) and os.unlink(self.flag))
        self.want = {}
        for i, name in enumerate(["n_HANG.bin", "n1.bin", "f_HANG.bin"] +
                                 ["f%02d.bin" % k for k in range(1, 10)] + ["u_HANG.bin", "u1.bin"]):
            self.want[name] = et.det_bytes(SIZE + 97 * i, 500 + i)
            et.write_file(os.path.join(self.src, "data", name), self.want[name])

    def mount_slots(self, slots):
        return self.mount(self.mount_faultfs(self.src),
                          opts=["cache.policy=future", "cache.prefetch=0",
                                "lower.read_slots=%d" % slots, "cache.memory=%d" % (64 * SIZE)])

    def reader(self, d, job, names, epochs):
        """Forks a process that registers job `job` (its own pid) over
        `names`, one per batch in their order, and reads the first of them.
        Returns a function that waits for it and asserts its bytes."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            ok = False
            try:
                paths = [d.path("data", n) for n in names]
                sampler = epochfs.sampler.EpochfsSampler(
                    list(range(len(names))), d.mnt, job, paths, 1, epochs,
                    order_fn=lambda e: list(range(len(names))), compute_ms=0, strict=True)
                k = next(iter(sampler))
                ok = et.read_file_raw(paths[k]) == self.want[names[k]]
            finally:
                os.write(w, b"1" if ok else b"0")
                os._exit(0)
        os.close(w)

        def done():
            self.assertEqual(os.read(r, 1), b"1", job)
            os.close(r)
            os.waitpid(pid, 0)
        return done

    def far_names(self, stuck):
        return ["f_HANG.bin" if stuck else "f01.bin"] + ["f%02d.bin" % k for k in range(2, 10)] + \
            ["f01.bin" if stuck else "f_HANG.bin"]

    def test_the_job_nearer_its_end_reads_at_once_beside_a_stuck_one(self):
        et.write_file(self.flag, b"")
        d = self.mount_slots(1)
        far = self.reader(d, "far", self.far_names(stuck=True), 5)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        near = self.reader(d, "near", ["n1.bin", "n_HANG.bin"], 1)
        near()  # read while "far"'s load is still stuck
        st = d.stats()
        self.assertEqual((st["read_waits"], st["read_waiting"]), (0, 0), st)
        os.unlink(self.flag)
        far()

    def test_a_job_further_from_its_end_waits_its_turn(self):
        et.write_file(self.flag, b"")
        d = self.mount_slots(1)
        near = self.reader(d, "near", ["n_HANG.bin", "n1.bin"], 1)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        far = self.reader(d, "far", self.far_names(stuck=False), 5)
        # "near"'s load never ends while the flag is there: "far"'s miss can
        # only start once it has waited its longest.
        far()
        st = d.stats()
        self.assertEqual((st["read_waits"], st["read_aged"], st["read_waiting"]), (1, 1, 0), st)
        self.assertGreaterEqual(st["read_wait_ms"], 1000, st)
        os.unlink(self.flag)
        near()

    def test_without_read_slots_nothing_waits(self):
        et.write_file(self.flag, b"")
        d = self.mount_slots(0)
        near = self.reader(d, "near", ["n_HANG.bin", "n1.bin"], 1)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        far = self.reader(d, "far", self.far_names(stuck=False), 5)
        far()
        st = d.stats()
        self.assertEqual((st["read_waits"], st["read_aged"]), (0, 0), st)
        os.unlink(self.flag)
        near()

    def test_a_job_alone_never_waits_for_its_own_stuck_load(self):
        # "solo"'s first load (s_HANG) is stuck with the key it asked with;
        # then it reads a large file, so its mean read size, and with it its
        # key (reads left x mean), rises far above the stuck load's. Its next
        # miss must start at once: a job is not ordered against itself.
        self.want["big.bin"] = et.det_bytes(16 * SIZE, 900)
        et.write_file(os.path.join(self.src, "data", "big.bin"), self.want["big.bin"])
        et.write_file(self.flag, b"")
        d = self.mount_slots(1)
        names = ["n_HANG.bin", "big.bin"] + ["f%02d.bin" % k for k in range(1, 10)]
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            ok = False
            try:
                paths = [d.path("data", n) for n in names]
                sampler = epochfs.sampler.EpochfsSampler(
                    list(range(len(names))), d.mnt, "solo", paths, 1, 1,
                    order_fn=lambda e: list(range(len(names))), compute_ms=0, strict=True)
                next(iter(sampler))
                stuck = os.fork()  # a loader of the job (a child: attributed to it)
                if stuck == 0:
                    good = et.read_file_raw(paths[0]) == self.want[names[0]]
                    os._exit(0 if good else 1)
                ok = et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT)
                for k in (1, 2):
                    ok = ok and et.read_file_raw(paths[k]) == self.want[names[k]]
                st = d.stats()
                ok = ok and (st["read_waits"], st["read_aged"], st["read_waiting"]) == (0, 0, 0)
                if os.path.exists(self.flag):
                    os.unlink(self.flag)
                ok = ok and os.waitpid(stuck, 0)[1] == 0
            finally:
                os.write(w, b"1" if ok else b"0")
                os._exit(0)
        os.close(w)
        got = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        self.assertEqual(got, b"1", d.stats())

    def test_unregistered_readers_never_wait(self):
        et.write_file(self.flag, b"")
        d = self.mount_slots(1)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            ok = et.read_file_raw(d.path("data", "u_HANG.bin")) == self.want["u_HANG.bin"]
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.close(w)
        self.assertTrue(et.wait_for(lambda: d.stats()["lower_in_flight"] >= 1, WAIT), d.stats())
        self.assertEqual(et.read_file_raw(d.path("data", "u1.bin")), self.want["u1.bin"])
        st = d.stats()
        self.assertEqual((st["read_waits"], st["read_waiting"]), (0, 0), st)
        os.unlink(self.flag)
        self.assertEqual(os.read(r, 1), b"1")
        os.close(r)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    et.main()
