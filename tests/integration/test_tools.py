#!/usr/bin/env python3
"""`epochfs warm` and `epochfs top` against a real mount.

warm: after `epochfs warm MOUNTPOINT` every file is resident (stats: used =
the dataset's bytes, one miss per file), a second pass by another process is
all hits with no byte from LOWER, and what warm prints agrees; a dataset
larger than the budget is warmed with a note; a path outside any mount and a
file that cannot be read (faultfs EIO) are errors naming the path, exit 1.
`--from LIST`: the listed files (a directory, an absolute path inside the
mount, a repeat, no final newline) are read once each, exactly their bytes
from LOWER; each bad line is named with its line number, the others still
read, exit 1; stats keeps each finished warm's row. `--background` returns
once its row is in stats; with one file hung in LOWER (faultfs) the row and
`top` show the others done of the total, then, released, all done.

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


def human(n):
    """As epochfs prints bytes (common/bytes_text.h HumanBytes)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%d B" % n if unit == "B" else "%.1f %s" % (n, unit)
        n /= 1024.0


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

    def test_warm_from_a_list(self):
        d = self.mount(self.lower, opts=["cache.memory=64MiB"])
        listed = ["c0/f00.bin", "c1/f01.bin", "./c1/f04.bin", "c2"]  # c2: a directory
        want_files = {"c0/f00.bin", "c1/f01.bin", "c1/f04.bin"} | {
            r for r in self.want if r.startswith("c2/")}
        lines = listed + ["", "c0/missing.bin", "../outside", "/etc/passwd",
                          d.path("c0/f03.bin"), "c0/f00.bin"]  # absolute inside; a repeat
        want_files.add("c0/f03.bin")
        lst = os.path.join(self.tmp, "list.txt")
        with open(lst, "w") as f:
            f.write("\n".join(lines))  # no newline after the last line: still read
        r = self.tool("warm", "--from", lst, d.mnt)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("%s:6: %s: No such file or directory" % (lst, d.path("c0/missing.bin")),
                      r.stderr)
        self.assertIn("%s:7: '../outside': leads out of the mount %s" % (lst, d.mnt), r.stderr)
        self.assertIn("%s:8: '/etc/passwd': an absolute path outside the mount" % lst, r.stderr)
        self.assertEqual(r.stderr.count("epochfs warm: "), 3, r.stderr)
        nbytes = sum(len(self.want[x]) for x in want_files)
        self.assertIn("warm: %d files, %s read in " % (len(want_files), human(nbytes)), r.stdout)
        self.assertIn("(walk ", r.stdout)
        self.assertIn("3 errors (2 bad lines in %s)" % lst, r.stdout)
        st = d.stats()
        self.assertEqual(st["bytes_read_lower"], nbytes, st)
        self.assertEqual((st["misses"], st["hits"]), (len(want_files), 0), st)
        self.assertEqual(st["used"], nbytes, st)
        # The list from standard input, all good: exit 0, nothing more from LOWER.
        r = subprocess.run([et.epochfs_bin(), "warm", "--from", "-", d.path("c0")],
                           input="c0/f00.bin\nc2/f02.bin\n", capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warm: 2 files", r.stdout)
        self.assertEqual(d.stats()["bytes_read_lower"], nbytes)
        # The stats' row of each finished warm (this process's, as root sees all).
        rows = d.stats()["warm"]
        self.assertEqual([(w["state"], w["files_done"], w["files_total"], w["bytes_done"],
                           w["errors"], w["running"]) for w in rows],
                         [("done", len(want_files), len(want_files), nbytes, 3, False),
                          ("done", 2, 2, len(self.want["c0/f00.bin"]) +
                           len(self.want["c2/f02.bin"]), 0, False)])
        self.assertEqual(d.unmount(), 0)

    def test_warm_in_the_background(self):
        # faultfs: reads of *HANG* files block while SOURCE/.hang exists, so
        # the warm is caught half done, whatever the machine's speed.
        src = self.make_dir("src")
        shutil.copytree(self.lower, src, dirs_exist_ok=True)
        hang = b"h" * 7000
        et.write_file(os.path.join(src, "c0", "zHANG.bin"), hang)
        flag = os.path.join(src, ".hang")
        et.write_file(flag, b"")
        self.addCleanup(lambda: os.path.exists(flag) and os.unlink(flag))
        d = self.mount(self.mount_faultfs(src), opts=["cache.memory=64MiB"])
        r = self.tool("warm", "--background", "-j", "2", d.mnt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warm: in the background as pid ", r.stdout)
        pid = int(r.stdout.split(" as pid ")[1].split(";")[0])

        def release_and_wait():  # runs first: no warm outlives the test
            if os.path.exists(flag):
                os.unlink(flag)
            et.wait_for(lambda: not os.path.exists("/proc/%d" % pid), 30)
        self.addCleanup(release_and_wait)
        self.assertIn("epochfs top %s" % d.mnt, r.stdout)
        rows = d.stats()["warm"]  # there when the command returns
        self.assertEqual([w["pid"] for w in rows], [pid])
        total = self.total + len(hang)

        def row():
            return d.stats()["warm"][0]
        # Every file but the hung one read (the empty .hang is a file too):
        # the row says so.
        files = FILES + 2
        self.assertTrue(et.wait_for(lambda: row()["files_done"] == files - 1,
                                    60 * et.TIME_SCALE), row())
        w = row()
        self.assertEqual((w["state"], w["running"], w["files_total"], w["bytes_total"],
                          w["bytes_done"], w["errors"]),
                         ("reading", True, files, total, self.total, 0), w)
        top = self.tool("top", "--once", d.mnt)
        self.assertIn("warm: pid %d reading   %d/%d files   %s of %s" % (
            pid, files - 1, files, human(self.total), human(total)), top.stdout)
        os.unlink(flag)  # the hung read answers
        self.assertTrue(et.wait_for(lambda: not row()["running"], 60 * et.TIME_SCALE), row())
        w = row()
        self.assertEqual((w["state"], w["files_done"], w["bytes_done"], w["errors"]),
                         ("done", files, total, 0), w)
        st = d.stats()
        self.assertEqual((st["used"], st["bytes_read_lower"]), (total, total), st)
        top = self.tool("top", "--once", d.mnt)
        self.assertIn("warm: pid %d done (exited)   %d/%d files" % (pid, files, files),
                      top.stdout)
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
