#!/usr/bin/python3
"""A daemon that dies under a training job: what the job is told (epochfs(8),
WHEN SOMETHING GOES WRONG), with the epochfs package as pip installs it.

- the daemon is SIGKILLed while its mount stays: a data file's read fails
  with ENOTCONN, and the sampler, asked to declare its next epoch, warns once
  that the mount is gone and how to recover (never "training goes on
  uncached"); with strict=True it raises EpochfsError saying the same;
- with auto_unmount the mount is removed when the daemon dies: the sampler
  sees the mount missing from /proc/self/mountinfo and says it is gone, and
  writes nothing into the bare mount point;
- a directory that never was a mount keeps the old message (uncached).
"""

import errno
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs_test as et  # noqa: E402
import epochfs  # noqa: E402
import epochfs.sampler  # noqa: E402

FILES = 6


class DeadMountTest(et.MountTestCase):
    def start(self, opts=()):
        lower, want = self.dataset([4096 + 13 * i for i in range(FILES)])
        d = self.mount(lower, opts=list(opts))
        paths = [d.path(n) for n in sorted(want)]
        return d, paths, want

    def sampler(self, d, paths, **kw):
        return epochfs.sampler.EpochfsSampler(list(range(FILES)), d.mnt, "dead", paths, 2, 3,
                                              close_at_exit=False, **kw)

    def first_epoch(self, s, paths, want):
        for k in s:
            self.assertEqual(et.read_file(paths[k]), want[os.path.basename(paths[k])])

    def declare_next(self, s):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(sorted(s), list(range(FILES)))  # the indices still come
        self.assertEqual(len(w), 1, [str(x.message) for x in w])
        return str(w[0].message)

    def assert_gone_message(self, text, mnt, why):
        self.assertIn("the epochfs mount %s is gone" % mnt, text)
        self.assertIn(why, text)
        self.assertIn("fusermount3 -u %s" % mnt, text)
        self.assertIn("restart training", text)
        self.assertNotIn("uncached", text)

    def test_killed_daemon_mount_left(self):
        d, paths, want = self.start()
        s = self.sampler(d, paths)
        self.first_epoch(s, paths, want)
        self.assertIsNone(s.disabled)
        d.kill()  # SIGKILL: the mount stays, dead
        self.assertTrue(et.is_mounted(d.mnt))
        self.assert_errno(errno.ENOTCONN, et.read_file, paths[0])
        text = self.declare_next(s)
        self.assert_gone_message(text, d.mnt, "Transport endpoint is not connected")
        self.assertTrue(s.mount_gone)
        # strict=True: the same words, raised.
        job = epochfs.Job(d.mnt, "other")
        self.assertEqual(job.gone(errno.ENOTCONN), "the epochfs mount %s is gone (Transport "
                         "endpoint is not connected: its daemon exited)" % d.mnt)
        with self.assertRaises(epochfs.EpochfsError) as cm:
            self.sampler(d, paths, strict=True)
        self.assertEqual(cm.exception.errno, errno.ENOTCONN)
        self.assert_gone_message(str(cm.exception), d.mnt, "its daemon exited")

    def test_killed_daemon_auto_unmount(self):
        d, paths, want = self.start(["auto_unmount"])
        s = self.sampler(d, paths)
        self.first_epoch(s, paths, want)
        d.kill()
        self.assertTrue(et.wait_for(lambda: not et.is_mounted(d.mnt), 30 * et.TIME_SCALE),
                        et.mount_entries(d.mnt))
        text = self.declare_next(s)
        self.assert_gone_message(text, d.mnt, "no longer mounted")
        self.assertEqual(os.listdir(d.mnt), [])  # nothing written into the bare directory

    def test_never_a_mount_goes_on_uncached(self):
        plain = self.make_dir("plain")
        paths = [os.path.join(plain, "f%d" % i) for i in range(FILES)]
        for p in paths:
            et.write_file(p, b"x")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = epochfs.sampler.EpochfsSampler(list(range(FILES)), plain, "j", paths, 2, 3,
                                               close_at_exit=False)
            self.assertEqual(sorted(s), list(range(FILES)))
        self.assertEqual(len(w), 1, [str(x.message) for x in w])
        self.assertIn("training goes on uncached", str(w[0].message))
        self.assertFalse(s.mount_gone)


if __name__ == "__main__":
    et.main()
