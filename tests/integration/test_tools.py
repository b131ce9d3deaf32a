#!/usr/bin/env python3
"""`epochfs warm` and `epochfs top` against a real mount.

warm: after `epochfs warm MOUNTPOINT` every file is resident (stats: used =
the dataset's bytes, one miss per file), a second pass by another process is
all hits with no byte from LOWER, and what warm prints agrees; a dataset
larger than the budget is warmed with a note; a path outside any mount and a
file that cannot be read (faultfs EIO) are errors naming the path, exit 1.

top: `--once` prints one frame (no terminal); in a real terminal (tmux) the
view shows the mount, the budget, a registered job's row, and, after reads,
the hit ratio those reads make. Waits are bounded polls of the pane, never
sleeps that a slow machine could outrun. A mount that goes away ends top
with exit 1.

SKIP (77) when not root or without /dev/fuse; the tmux case is skipped
without tmux.
"""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402

KiB = 1024
FILES = 30


class ToolsTest(et.MountTestCase):

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.want = {}
        for i in range(FILES):
            rel = "c%d/f%02d.bin" % (i % 3, i)
            self.want[rel] = et.det_bytes(20 * KiB + 37 * i, i)
            et.write_file(os.path.join(self.lower, rel), self.want[rel])
        self.total = sum(len(v) for v in self.want.values())

    @staticmethod
    def unmount_under(d):
        """Unmount while a top polls the mount: lazily (-z), since a plain
        unmount fails with EBUSY whenever it meets top's open stats file."""
        r = subprocess.run(["fusermount3", "-u", "-z", d.mnt], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("fusermount3 -u -z failed: %s" % r.stderr.strip())
        return d.wait_exit()

    def tool(self, *args):
        return subprocess.run([et.epochfs_bin()] + list(args), capture_output=True, text=True,
                              timeout=120)

    def test_warm_makes_every_later_read_a_hit(self):
        d = self.mount(self.lower, opts=["cache.memory=64MiB"])
        r = self.tool("warm", "-j", "3", d.mnt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warm: %d files" % FILES, r.stdout)
        st = d.stats()
        self.assertEqual(st["used"], self.total, st)
        self.assertEqual((st["misses"], st["hits"]), (FILES, 0))
        self.assertEqual(st["bytes_read_lower"], self.total)
        # Another process reads everything: all hits, nothing from LOWER.
        for rel, data in self.want.items():
            self.assertEqual(et.read_file_raw(d.path(rel)), data, rel)
        st2 = d.stats()
        self.assertEqual((st2["misses"], st2["hits"]), (FILES, FILES))
        self.assertEqual(st2["bytes_read_lower"], self.total)
        # Warming again reads from the cache only; a subdirectory is a PATH too.
        r = self.tool("warm", d.path("c1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warm: %d files" % (FILES // 3), r.stdout)
        self.assertIn("0 B from lower", r.stdout)
        self.assertEqual(d.stats()["bytes_read_lower"], self.total)
        self.assertEqual(d.unmount(), 0)

    def test_warm_errors_and_a_small_budget(self):
        r = self.tool("warm", self.lower)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is not inside an epochfs mount", r.stderr)
        d = self.mount(self.lower, opts=["cache.memory=256KiB"])
        r = self.tool("warm", "--quiet", d.mnt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("the budget is 256.0 KiB: only part will stay cached", r.stderr)
        self.assertLessEqual(d.stats()["used"], 256 * KiB)
        self.assertEqual(d.unmount(), 0)

        # A file LOWER cannot read (faultfs: names with EIO fail reads).
        src = self.make_dir("src")
        shutil.copytree(self.lower, src, dirs_exist_ok=True)
        et.write_file(os.path.join(src, "c0", "badEIO.bin"), b"x" * 5000)
        flt = self.mount_faultfs(src)
        d = self.mount(flt, opts=["cache.memory=64MiB"])
        r = self.tool("warm", d.mnt)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("badEIO.bin: Input/output error", r.stderr)
        self.assertIn("warm: %d files" % (FILES + 1), r.stdout)
        self.assertIn("1 errors", r.stdout)
        self.assertEqual(d.stats()["used"], self.total, "the others were still read")
        self.assertEqual(d.unmount(), 0)

    def test_top_once_and_a_mount_that_goes_away(self):
        d = self.mount(self.lower, opts=["cache.memory=64MiB"])
        r = self.tool("top", "--once", d.path("c0"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("on %s" % d.mnt, r.stdout)
        self.assertIn("budget 64.0 MiB", r.stdout)
        self.assertIn("(no jobs registered)", r.stdout)
        top = subprocess.Popen([et.epochfs_bin(), "top", "-i", "0.1", d.mnt],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: top.poll() is None and top.kill())
        self.assertEqual(self.unmount_under(d), 0)
        self.assertEqual(top.wait(timeout=60), 1)
        self.assertIn("epochfs top:", top.stderr.read())

    def test_top_in_a_terminal(self):
        if shutil.which("tmux") is None:
            self.skipTest("no tmux")
        d = self.mount(self.lower, opts=["cache.memory=64MiB", "cache.policy=epoch"])
        jd = d.path(".epochfs", "jobs", "vit")
        os.mkdir(jd)
        with open(os.path.join(jd, "config"), "w") as f:
            f.write("batch_size = 5\nepochs = 2\n")
        sock = "epochfs-test-%d" % os.getpid()
        tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
        self.addCleanup(subprocess.run, tmux + ["kill-server"], capture_output=True)
        subprocess.run(tmux + ["new-session", "-d", "-x", "132", "-y", "30",
                               "%s top -i 0.1 %s" % (et.epochfs_bin(), d.mnt)], check=True)

        def pane():
            return subprocess.run(tmux + ["capture-pane", "-p"], capture_output=True,
                                  text=True).stdout
        self.assertTrue(et.wait_for(lambda: "vit" in pane() and "configured" in pane(), 60),
                        pane())
        self.assertIn("budget 64.0 MiB", pane())
        self.assertIn("JOB", pane())
        # Reads change what the view shows: 30 misses, then 30 hits.
        for _ in range(2):
            for rel in self.want:
                et.read_file_raw(d.path(rel))
        self.assertTrue(et.wait_for(lambda: "(all 50.0%)" in pane(), 60), pane())
        self.assertEqual(pane().count("budget 64.0 MiB"), 1, "one frame on the screen")
        self.assertEqual(self.unmount_under(d), 0)


if __name__ == "__main__":
    et.main()
