#!/usr/bin/python3
"""A restart as epochfs(8) "RESTART AND UPGRADE" documents it, under a reader.

The daemon is stopped with SIGTERM (what `systemctl restart` does) while a
reader holds a file open and a job is declared, and a new daemon mounts the
same LOWER on the same directory with the same cache.disk_path. Held there:
the busy mount goes and the old daemon exits 0; the reader's open file is the
dead mount's, so a read of bytes the kernel does not hold fails with ENOTCONN;
opened again by its path the file reads right through the new mount; every
file of the dataset comes back from the disk tier (LOWER not read) with the
RAM tier empty at start; the job's declaration is gone (declared anew by the
job that starts again).
"""

import errno
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402
import test_jobs as tj  # noqa: E402

FILES = 20
SIZE = 256 * 1024
BIG = 16 << 20  # the reader's file: a read at 12 MiB is beyond any readahead of its first page

# Holds MNT/big.bin open after reading its first page; on "go" reads 4 KiB at
# 12 MiB through that descriptor and prints "ok" or the errno's name.
READER = r"""
import errno, os, sys
fd = os.open(sys.argv[1] + "/big.bin", os.O_RDONLY)
os.pread(fd, 4096, 0)
print("held", flush=True)
sys.stdin.readline()
try:
    os.pread(fd, 4096, 12 << 20)
    print("ok", flush=True)
except OSError as e:
    print(errno.errorcode[e.errno], flush=True)
"""


class RestartTest(et.MountTestCase):
    def opts(self):
        return ["cache.memory=2MiB", "cache.disk_path=" + self.disk,
                "cache.disk_size=64MiB"]

    def test_restart_under_a_reader_comes_back_warm_from_disk(self):
        lower, want = self.dataset([SIZE] * FILES, seed=3)
        want["big.bin"] = et.det_bytes(BIG, 77)
        et.write_file(os.path.join(lower, "big.bin"), want["big.bin"])
        self.disk = self.make_dir("disk")
        small = sorted(n for n in want if n != "big.bin")
        d = self.mount(lower, opts=self.opts())
        for name in small:
            self.assertEqual(et.read_file(d.path(name)), want[name], name)
        self.assertTrue(et.wait_for(
            lambda: d.stats()["tiers"]["disk"]["objects"] >= FILES, 30 * et.TIME_SCALE),
            d.stats()["tiers"]["disk"])
        os.mkdir(d.path(".epochfs", "jobs", "train"))
        tj.ctl_write(d.path(".epochfs", "jobs", "train", "pids"), "%d\n" % os.getpid())
        self.assertIn("train", os.listdir(d.path(".epochfs", "jobs")))

        reader = subprocess.Popen([sys.executable, "-c", READER, d.mnt], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(lambda: reader.poll() is None and (reader.kill(), reader.wait()))
        self.assertEqual(reader.stdout.readline().strip(), "held")

        # The restart: SIGTERM to the old daemon, the same command again.
        d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait_exit(), 0)
        self.assertFalse(et.is_mounted(d.mnt))
        d2 = self.mount(lower, mnt=d.mnt, opts=self.opts())
        st = d2.stats()
        self.assertEqual(st["tiers"]["ram"]["objects"], 0)
        self.assertGreaterEqual(st["tiers"]["disk"]["objects"], FILES)
        self.assertNotIn("train", os.listdir(d2.path(".epochfs", "jobs")))

        reader.stdin.write("go\n")
        reader.stdin.flush()
        self.assertEqual(reader.stdout.readline().strip(), errno.errorcode[errno.ENOTCONN])
        self.assertEqual(reader.wait(timeout=et.EXIT_TIMEOUT), 0)

        for name in small:
            self.assertEqual(et.read_file(d2.path(name)), want[name], name)
        st = d2.stats()
        self.assertEqual(st["bytes_read_lower"], 0)
        self.assertEqual(st["tiers"]["disk"]["hits"], FILES)
        self.assertEqual(st["tiers"]["disk"]["checksum_errors"], 0)
        # The reader's file, opened again by its path: the new mount's.
        self.assertEqual(et.read_file(d2.path("big.bin")), want["big.bin"])
        self.assertEqual(d2.unmount(), 0)


if __name__ == "__main__":
    et.main()
