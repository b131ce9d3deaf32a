#!/usr/bin/python3
"""A live FUSE connection taken over by a second process (takeover_probe.cc).

What docs/restart.md says of libfuse 3.14, held by a test: a daemon hands its
/dev/fuse descriptor (SCM_RIGHTS) to a second process and exits without
unmounting; the second builds a session on "/dev/fd/N" and completes libfuse's
INIT state with a synthetic FUSE_INIT; a reader that kept its file open across
the hand-over, and a request it made while no process was reading /dev/fuse,
get every byte right and no error. The steps are the test's, never a clock's:
the reader reads on command, the new daemon serves on command.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402

FILE_SIZE = 8 << 20

# The reader: holds MNT/f open; on each stdin line "read" reads it whole in
# 64 KiB preads through that descriptor, on "reopen" opens it again; answers
# "ok" or the error.
READER = r"""
import os, sys
size = %d
want = bytes(((((i * 131 + 7) >> 3)) & 0xff) for i in range(size))
fd = os.open(sys.argv[1] + "/f", os.O_RDONLY)
for line in sys.stdin:
    try:
        if line.strip() == "reopen":
            os.close(fd)
            fd = os.open(sys.argv[1] + "/f", os.O_RDONLY)
        got = b"".join(os.pread(fd, 65536, off) for off in range(0, size, 65536))
        print("ok" if got == want else "wrong bytes", flush=True)
    except OSError as e:
        print("error %%s" %% e, flush=True)
""" % FILE_SIZE


def probe_bin():
    return os.environ.get("TAKEOVER_PROBE_BIN") or os.path.join(
        et.REPO, "build", "tests", "integration", "takeover_probe")


def listed(mnt):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mnt for line in f)


class TakeoverProbeTest(et.MountTestCase):
    def start(self, args, **kw):
        p = subprocess.Popen([probe_bin()] + args, text=True, **kw)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        return p

    def test_a_reader_keeps_its_file_across_the_takeover(self):
        mnt = self.make_mountpoint()
        sock = os.path.join(self.tmp, "takeover.sock")
        old_err = os.path.join(self.tmp, "old.stderr")
        with open(old_err, "w") as e:
            old = self.start(["old", mnt, sock], stderr=e)
        self.assertTrue(et.wait_for(lambda: et.is_mounted(mnt) and os.path.exists(sock),
                                    et.MOUNT_TIMEOUT), "the old daemon did not mount")
        reader = subprocess.Popen([sys.executable, "-c", READER, mnt], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(lambda: reader.poll() is None and (reader.kill(), reader.wait()))

        def step(cmd):
            reader.stdin.write(cmd + "\n")
            reader.stdin.flush()
            return reader.stdout.readline().strip()

        self.assertEqual(step("read"), "ok")
        new = self.start(["new", sock], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(new.stderr.readline().strip(), "received")
        # The old daemon is gone; the connection, held by the new one, stays.
        self.assertEqual(old.wait(timeout=et.EXIT_TIMEOUT), 0)
        with open(old_err) as f:
            self.assertIn("old: handed over after 128 reads", f.read())
        self.assertTrue(listed(mnt))  # not et.is_mounted: its realpath would wait on the mount
        # A read made while no process reads /dev/fuse waits in the kernel's
        # queue; the new daemon, once serving, answers it.
        reader.stdin.write("read\n")
        reader.stdin.flush()
        new.stdin.write("go\n")
        new.stdin.flush()
        self.assertTrue(new.stderr.readline().startswith("serving"))
        self.assertEqual(reader.stdout.readline().strip(), "ok")
        self.assertEqual(step("reopen"), "ok")
        reader.stdin.close()
        self.assertEqual(reader.wait(timeout=et.EXIT_TIMEOUT), 0)
        subprocess.run(["umount", mnt], check=True)
        self.assertEqual(new.wait(timeout=et.EXIT_TIMEOUT), 0)
        # Everything after the hand-over was the new daemon's: two passes.
        self.assertEqual(new.stderr.read().strip(), "served 256 reads")


if __name__ == "__main__":
    et.main()
