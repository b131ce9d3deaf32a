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
# 64 KiB preads through that descriptor, on "reopen" opens it again and reads
# it so; answers "ok" or "error ERRNO".
READER = r"""
import errno, os, sys
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
        print("error " + errno.errorcode[e.errno], flush=True)
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

    def take_over(self, new_args):
        """Mounts with the old probe, reads the file once, hands the mount to
        `takeover_probe new SOCKET *new_args`, reads it again through the
        same descriptor (a read made while no process reads /dev/fuse) and
        through a new open. Returns (the reader's two answers, the new
        probe's last line)."""
        mnt = self.make_mountpoint()
        sock = os.path.join(self.tmp, "takeover.sock")
        old_err = os.path.join(self.tmp, "old.stderr")
        with open(old_err, "w") as e:
            old = self.start(["old", mnt, sock], stderr=e)
        self.assertTrue(et.wait_for(lambda: listed(mnt) and os.path.exists(sock),
                                    et.MOUNT_TIMEOUT), "the old daemon did not mount")
        reader = subprocess.Popen([sys.executable, "-c", READER, mnt], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(lambda: reader.poll() is None and (reader.kill(), reader.wait()))

        def step(cmd):
            reader.stdin.write(cmd + "\n")
            reader.stdin.flush()
            return reader.stdout.readline().strip()

        self.assertEqual(step("read"), "ok")
        new = self.start(["new", sock] + new_args, stdin=subprocess.PIPE,
                         stderr=subprocess.PIPE)
        self.assertEqual(new.stderr.readline().strip(), "received")
        # The old daemon is gone; the connection, held by the new one, stays.
        self.assertEqual(old.wait(timeout=et.EXIT_TIMEOUT), 0)
        with open(old_err) as f:
            self.assertIn("old: handed over after 128 reads", f.read())
        self.assertTrue(listed(mnt))
        # A read made while no process reads /dev/fuse waits in the kernel's
        # queue; the new daemon, once serving, answers it.
        reader.stdin.write("read\n")
        reader.stdin.flush()
        new.stdin.write("go\n")
        new.stdin.flush()
        self.assertTrue(new.stderr.readline().startswith("serving"))
        answers = [reader.stdout.readline().strip(), step("reopen")]
        reader.stdin.close()
        self.assertEqual(reader.wait(timeout=et.EXIT_TIMEOUT), 0)
        subprocess.run(["umount", mnt], check=True)
        self.assertEqual(new.wait(timeout=et.EXIT_TIMEOUT), 0)
        return answers, new.stderr.read().strip()

    def test_a_reader_keeps_its_file_across_the_takeover(self):
        answers, served = self.take_over([])
        self.assertEqual(answers, ["ok", "ok"])
        # Everything after the hand-over was the new daemon's: two passes.
        self.assertEqual(served, "served 256 reads")

    def test_without_the_synthetic_init_every_request_fails(self):
        # A session that never saw INIT answers every request with EIO
        # (libfuse's got_init): the synthetic INIT is what makes it serve.
        answers, served = self.take_over(["--no-init"])
        self.assertEqual(answers, ["error EIO", "error EIO"])
        self.assertEqual(served, "served 0 reads")

if __name__ == "__main__":
    et.main()
