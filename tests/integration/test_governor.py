#!/usr/bin/env python3
"""The memory governor (cache.memory = "auto") under real memory pressure.

A cgroup v1 memory cgroup with a 1280 MiB limit and swappiness 0 holds the
daemon (started inside it) and, later, a memory hog. The test fills the cache
by reading a 600 MiB dataset through the mount, then starts the hog in the
same cgroup: it allocates and touches 100 MiB at a time up to 800 MiB and
holds it. The hog takes each step only when the test says so, and the test
says so once the governor has sampled the previous step and the cache fits
beside it (bounded waits): the outcome never depends on how the governor's
sampling thread is scheduled against the hog, on a loaded machine or under a
sanitizer. The steps are 100 MiB against a 128 MiB margin, so a step the
governor has not yet seen never overflows the cgroup.

Under AddressSanitizer, freed memory waits in a quarantine (256 MiB by
default) before it goes back to the OS, so an eviction would not lower the
daemon's usage for a long while; the test shrinks the quarantine for the
daemon (ASAN_OPTIONS), which changes nothing for other builds. Cache (600 MiB) + hog (800 MiB) + the daemon itself do not fit in
1280 MiB, so unless the cache shrinks, the kernel OOM-kills someone.

Asserted: the governor's budget and the resident bytes drop while the hog
grows; neither the hog nor the daemon is killed (processes alive, the
cgroup's oom_kill counter 0); every file read through the mount before,
during and after the pressure is byte-identical to LOWER; the stats show
samples and a fit with a positive slope during the growth, a plateau after
it; the budget grows back once the hog has exited.

A control case runs the same pressure with a fixed budget (no governor) and
requires the kernel to OOM-kill someone in the cgroup: the pressure is real.

SKIP (77) when not root, without /dev/fuse or without a cgroup v1 memory
controller. The cgroup is removed afterwards (processes moved out first).
"""

import hashlib
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402

MiB = 1 << 20
CG_ROOT = "/sys/fs/cgroup/memory"
LIMIT = 1280 * MiB
FILES = 150
FILE_SIZE = 4 * MiB          # 600 MiB of data
HOG_STEP = 100 * MiB
HOG_STEPS = 8                # up to 800 MiB
HOG_TOTAL = HOG_STEP * HOG_STEPS
MARGIN = 128 * MiB
# While the hog holds, the cache must fit in what is left of the cgroup: at
# most LIMIT - MARGIN - HOG_TOTAL (352 MiB), whatever the daemon's own size
# (a sanitizer build is larger, so its first budget is smaller).
HELD_CEILING = LIMIT - MARGIN - HOG_TOTAL
STEP_WAIT = 60.0             # bound on the governor's reaction to one step (liveness only)

HOG = r"""
import sys
step, steps = int(sys.argv[1]), int(sys.argv[2])
held = []
for i in range(steps):
    if sys.stdin.readline().strip() != "step":   # the test's go for the next step
        sys.exit(0)
    held.append(b"\x01" * step)      # every page written
    print("allocated", (i + 1) * step, flush=True)
print("holding", flush=True)
sys.stdin.read()                      # until the test closes stdin
print("freed", flush=True)
"""


def cgroup_v1_memory():
    return os.path.isfile(os.path.join(CG_ROOT, "memory.limit_in_bytes"))


def own_memory_cgroup():
    with open("/proc/self/cgroup") as f:
        for line in f:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3 and "memory" in parts[1].split(","):
                return parts[2]
    return "/"


def read_kv(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(" ")
            if v.strip().lstrip("-").isdigit():
                out[k] = int(v)
    return out


def sha(data):
    return hashlib.sha256(data).hexdigest()


class GovernorUnderPressure(et.MountTestCase):

    def setUp(self):
        super().setUp()
        # AddressSanitizer builds: freed cache buffers go back to the OS at
        # once instead of after a 256 MiB quarantine (no effect otherwise).
        old = os.environ.get("ASAN_OPTIONS")
        self.addCleanup(lambda: os.environ.__setitem__("ASAN_OPTIONS", old) if old is not None
                        else os.environ.pop("ASAN_OPTIONS", None))
        os.environ["ASAN_OPTIONS"] = ":".join(filter(None, [
            old, "quarantine_size_mb=4", "allocator_release_to_os_interval_ms=100"]))
        if not cgroup_v1_memory():
            self.skipTest("no cgroup v1 memory controller at " + CG_ROOT)
        self.cg = os.path.join(CG_ROOT, "epochfs-test-%d" % os.getpid())
        os.mkdir(self.cg)
        self.addCleanup(self.remove_cgroup)
        self.cg_write("memory.limit_in_bytes", str(LIMIT))
        try:
            self.cg_write("memory.swappiness", "0")
        except OSError:
            pass  # no swap on the host is as good

    def cg_write(self, name, value):
        with open(os.path.join(self.cg, name), "w") as f:
            f.write(value + "\n")

    def cg_read(self, name):
        with open(os.path.join(self.cg, name)) as f:
            return f.read()

    def remove_cgroup(self):
        if not os.path.isdir(self.cg):
            return
        home = os.path.join(CG_ROOT, own_memory_cgroup().lstrip("/"))
        for _ in range(50):
            left = self.cg_read("cgroup.procs").split()
            for pid in left:
                try:
                    with open(os.path.join(home, "cgroup.procs"), "w") as f:
                        f.write(pid + "\n")
                except OSError:
                    pass
            try:
                os.rmdir(self.cg)
                return
            except OSError:
                time.sleep(0.1)
        print("test_governor: could not remove %s" % self.cg, file=sys.stderr)

    def in_cgroup(self, cmd):
        """cmd run by a shell that first moves itself into the cgroup, then
        execs cmd (same pid: poll/kill see the real process)."""
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.cg] + cmd

    def epochfs_cmd(self, lower, mnt, opts=None, extra=None, foreground=True):
        return self.in_cgroup(super().epochfs_cmd(lower, mnt, opts, extra, foreground))

    @staticmethod
    def stop_hog(hog):
        if hog.poll() is None:
            hog.kill()
        hog.wait()
        for f in (hog.stdin, hog.stdout):
            if f and not f.closed:
                try:
                    f.close()
                except OSError:
                    pass

    def make_dataset(self):
        lower = self.make_dir("lower")
        want = {}
        for i in range(FILES):
            name = "d%02d/f%03d.bin" % (i % 10, i)
            data = et.det_bytes(FILE_SIZE, i)
            et.write_file(os.path.join(lower, name), data)
            want[name] = sha(data)
        return lower, want

    def start_hog(self):
        hog = subprocess.Popen(
            self.in_cgroup([sys.executable, "-c", HOG, str(HOG_STEP), str(HOG_STEPS)]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.stop_hog, hog)
        return hog

    @staticmethod
    def hog_go(hog, steps=1):
        hog.stdin.write("step\n" * steps)
        hog.stdin.flush()

    def test_control_a_fixed_budget_gets_someone_oom_killed(self):
        # The same pressure with cache.memory = 700MiB (no governor): the cache
        # does not give way, so the kernel kills the hog or the daemon. This
        # shows that the pressure of the governor test is real.
        lower, want = self.make_dataset()
        d = self.mount(lower, opts=["cache.memory=700MiB"])
        self.assertNotIn("governor", d.stats())
        for name in want:
            et.read_file_raw(d.path(name))
        self.assertGreaterEqual(d.stats()["used"], 500 * MiB)
        hog = self.start_hog()
        self.hog_go(hog, HOG_STEPS)   # every step at once: nothing waits for anyone
        et.wait_for(lambda: hog.poll() is not None or not d.alive(), 60, 0.25)
        oom = read_kv(os.path.join(self.cg, "memory.oom_control"))
        self.assertTrue(hog.poll() is not None or not d.alive(),
                        "nothing was killed: the test cgroup is not tight enough")
        self.assertGreaterEqual(oom.get("oom_kill", 0), 1, oom)
        print("\ncontrol: fixed 700 MiB budget: hog %s, daemon %s, oom_kill %d" % (
            "killed" if hog.poll() is not None else "alive",
            "alive" if d.alive() else "killed", oom.get("oom_kill", 0)))

    def test_cache_shrinks_as_the_hog_grows_and_nothing_is_killed(self):
        lower, want = self.make_dataset()
        d = self.mount(lower, opts=["cache.memory=auto", "cache.memory_margin=%dMiB" % (MARGIN >> 20),
                                    "cache.governor_interval=0.5"])
        self.assertIn(str(d.proc.pid), self.cg_read("cgroup.procs").split(),
                      "the daemon is not in the test cgroup")
        st = d.stats()
        self.assertIn("governor", st)
        g = st["governor"]
        self.assertTrue(g["cgroup"]["limited"], g["cgroup"])
        self.assertEqual(g["cgroup"]["limit"], LIMIT)
        self.assertLessEqual(st["budget"], LIMIT - MARGIN)

        errors = []

        def read_all(tag):
            for name, h in want.items():
                got = et.read_file_raw(d.path(name))
                if sha(got) != h:
                    errors.append("%s: %s differs (%d bytes)" % (tag, name, len(got)))

        # Fill the cache: everything fits in the first budget.
        read_all("fill")
        read_all("fill-2")
        before = d.stats()
        self.assertEqual(errors, [])
        base_usage = int(self.cg_read("memory.usage_in_bytes"))
        why = "before the hog: %r; cgroup usage %d MiB" % (
            {k: before[k] for k in ("budget", "used")}, base_usage >> 20)
        # The cache is full. Its first budget depends on the daemon's own
        # size and growth: under AddressSanitizer the daemon grows while the
        # cache fills, the governor extrapolates that rise and the budget
        # can start near 400 MiB instead of 1.1 GiB.
        self.assertGreaterEqual(before["used"],
                                0.9 * min(FILES * FILE_SIZE, before["budget"]), why)
        # Without shrinking, cache + hog + what the cgroup already holds
        # beyond the cache would not fit: the cache has to shrink or someone
        # is killed.
        self.assertGreater(base_usage + HOG_TOTAL, LIMIT, why)

        # Readers keep reading through the mount during the pressure.
        stop = threading.Event()

        def reader():
            n = 0
            while not stop.is_set():
                read_all("during-%d" % n)
                n += 1
        rt = threading.Thread(target=reader)
        rt.start()
        self.addCleanup(stop.set)

        hog = self.start_hog()

        # A sampler thread records the stats while the hog grows and holds;
        # this thread drives the hog one step at a time.
        trace = []  # (t, budget, used, slope, plateau, peak, non_cache)
        t0 = time.monotonic()
        lines = []
        sampling = threading.Event()

        def hog_reader():
            for line in hog.stdout:
                lines.append((time.monotonic() - t0, line.strip()))
        ht = threading.Thread(target=hog_reader)
        ht.start()

        def sampler():
            while not sampling.is_set():
                try:
                    s = d.stats()
                except (OSError, ValueError):
                    break
                gv = s["governor"]
                trace.append((time.monotonic() - t0, s["budget"], s["used"],
                              gv["fit"]["slope_bytes_per_s"], gv["fit"]["plateau"],
                              gv["predicted_peak"], gv["non_cache"]))
                time.sleep(0.25)
        st_thread = threading.Thread(target=sampler)
        st_thread.start()
        self.addCleanup(sampling.set)

        def alive():
            return hog.poll() is None and d.alive()

        holding_at = None
        for i in range(1, HOG_STEPS + 1):
            ticks = d.stats()["governor"]["ticks"]
            self.hog_go(hog)
            et.wait_for(lambda: not alive() or
                        any(l == "allocated %d" % (i * HOG_STEP) for _, l in lines),
                        STEP_WAIT, 0.05)
            if not alive():
                break

            def reacted():
                s = d.stats()
                g = s["governor"]
                return (g["ticks"] >= ticks + 3 and g["non_cache"] >= i * HOG_STEP and
                        s["used"] <= s["budget"])
            et.wait_for(lambda: not alive() or reacted(), STEP_WAIT, 0.1)
            if not alive():
                break
        et.wait_for(lambda: not alive() or any(l == "holding" for _, l in lines),
                    STEP_WAIT, 0.05)
        holding = [t for t, l in lines if l == "holding"]
        if holding:
            holding_at = holding[0]
            # Hold for a while: the fit must settle on a plateau.
            ticks = d.stats()["governor"]["ticks"]
            et.wait_for(lambda: not alive() or (
                d.stats()["governor"]["ticks"] >= ticks + 24 and
                d.stats()["governor"]["fit"]["plateau"]), STEP_WAIT, 0.25)
        sampling.set()
        st_thread.join(timeout=30)
        during = d.stats()
        trace.append((time.monotonic() - t0, during["budget"], during["used"],
                      during["governor"]["fit"]["slope_bytes_per_s"],
                      during["governor"]["fit"]["plateau"],
                      during["governor"]["predicted_peak"], during["governor"]["non_cache"]))

        self.assertIsNone(hog.poll(), "the hog was killed (%s); trace %r" % (hog.returncode, trace))
        self.assertTrue(d.alive(), "the daemon died; stderr:\n" + d.stderr_text())
        self.assertIsNotNone(holding_at, "the hog never reached its size: %r" % lines)
        oom = read_kv(os.path.join(self.cg, "memory.oom_control"))
        self.assertEqual(oom.get("oom_kill", 0), 0, oom)
        self.assertEqual(oom.get("under_oom", 0), 0, oom)

        first_budget = before["budget"]
        min_budget = min(b for _, b, *_ in trace)
        min_used = min(u for _, _, u, *_ in trace)
        self.assertLessEqual(min_budget, HELD_CEILING, trace)
        self.assertLessEqual(min_used, HELD_CEILING, trace)
        self.assertLess(min_used, before["used"], trace)
        # A positive slope, not a plateau, while the hog grew; a plateau once
        # it held for a while.
        self.assertTrue(any(sl > 0 and not pl for t, _, _, sl, pl, *_ in trace
                            if t <= holding_at + 1), trace)
        self.assertTrue(trace[-1][4], "no plateau after the hog settled: %r" % trace[-1:])
        gv = during["governor"]
        self.assertGreaterEqual(len(gv["samples"]), 20)
        self.assertGreaterEqual(gv["shrinks"], 1)
        self.assertGreaterEqual(len(gv["budget_history"]), 2)
        self.assertGreater(gv["non_cache"], HOG_TOTAL)
        # What is resident now fits beside the hog.
        self.assertLessEqual(during["used"], LIMIT - HOG_TOTAL, during)

        # The hog exits: the budget grows back (slowly), reads stay exact.
        hog.stdin.close()
        hog.wait(timeout=10)
        ht.join(timeout=10)
        low = d.stats()["budget"]
        grown = et.wait_for(lambda: d.stats()["budget"] > low + 300 * MiB, 30, 0.5)
        stop.set()
        rt.join(timeout=120)
        self.assertFalse(rt.is_alive())
        read_all("after")
        after = d.stats()
        self.assertTrue(grown, "the budget did not grow back: %d -> %d" % (low, after["budget"]))
        self.assertEqual(errors, [], errors[:5])
        oom = read_kv(os.path.join(self.cg, "memory.oom_control"))
        self.assertEqual(oom.get("oom_kill", 0), 0, oom)
        self.assertTrue(d.alive())
        self.assert_stats_sane(after)

        print("\ngovernor: first budget %d MiB, used %d MiB before the hog; lowest budget %d MiB,"
              " lowest used %d MiB during; budget %d MiB after; cgroup failcnt %s" % (
                  first_budget >> 20, before["used"] >> 20, min_budget >> 20, min_used >> 20,
                  after["budget"] >> 20, self.cg_read("memory.failcnt").strip()))
        for row in trace[::4]:
            print("  t=%5.1fs budget=%5d MiB used=%5d MiB slope=%7.1f MiB/s plateau=%d "
                  "peak=%5d MiB non_cache=%5d MiB" % (
                      row[0], row[1] >> 20, row[2] >> 20, row[3] / MiB, row[4],
                      row[5] >> 20, row[6] >> 20))
        self.assertEqual(d.unmount(), 0)


if __name__ == "__main__":
    et.main()
