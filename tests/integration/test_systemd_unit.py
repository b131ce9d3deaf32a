#!/usr/bin/env python3
"""systemd/epochfs@.service, as meson configured it, is a unit that works.

systemd is not PID 1 here, so the unit's own commands are run the way
systemd would run them (specifiers %i/%f, the EnvironmentFile's $OPTS split
at blanks and ${LOWER} kept whole, "$$" as "$"): ExecStartPre and ExecStart
mount, ExecStartPost returns 0 once the mount answers and the files read
byte-exact (and 1 when the daemon exits instead); SIGTERM (systemctl stop) unmounts and the daemon exits 0; after
a SIGKILL (a crash) the mount is left dead until ExecStopPost clears it, and
the restart mounts again. `systemd-analyze verify` accepts the unit when
systemd's tools are installed.

SKIP (77) when not root or without /dev/fuse.
"""

import os
import shlex
import shutil
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402


def unit_path():
    return os.environ.get("EPOCHFS_UNIT", "")


def service_lines(text):
    """[(key, value)] of the [Service] section."""
    out, section = [], None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]":
            k, _, v = line.partition("=")
            out.append((k, v))
    return out


class SystemdUnitTest(et.MountTestCase):

    def setUp(self):
        super().setUp()
        if not os.path.isfile(unit_path()):
            self.fail("EPOCHFS_UNIT does not name the configured unit: %r" % unit_path())
        with open(unit_path()) as f:
            self.text = f.read()
        self.lower = self.make_dir("lower")
        self.want = {"a/x.bin": et.det_bytes(70000, 1), "b.bin": et.det_bytes(5000, 2)}
        for rel, data in self.want.items():
            et.write_file(os.path.join(self.lower, rel), data)
        self.mnt = os.path.join(self.tmp, "mnt point")  # not yet there: ExecStartPre makes it
        self.addCleanup(et.force_unmount, self.mnt)
        self.instance = subprocess.run(["systemd-escape", "--path", self.mnt], capture_output=True,
                                       text=True).stdout.strip() if shutil.which(
                                           "systemd-escape") else "x"
        self.env = {"LOWER": self.lower, "OPTS": "-o cache.memory=16MiB -o fsname=unit"}

    def command(self, key):
        """The unit's command for `key` as systemd runs it: (argv, may_fail)."""
        [(_, v)] = [(k, v) for k, v in service_lines(self.text) if k == key]
        may_fail = v.startswith("-")
        argv = []
        for word in shlex.split(v.lstrip("-")):
            word = word.replace("%f", self.mnt).replace("%i", self.instance)
            if word == "$OPTS":
                argv += self.env["OPTS"].split()
                continue
            argv.append(word.replace("${LOWER}", self.env["LOWER"]).replace("$$", "$"))
        if argv[0].endswith("/epochfs"):
            # The build's binary, not the installed one, and not the host's
            # SYSCONFDIR/epochfs/epochfs.toml (hermetic, as epochfs_cmd).
            argv[0:1] = [et.epochfs_bin(), "--no-config"]
        return argv, may_fail

    def run_cmd(self, key, mainpid=None, check=True):
        argv, may_fail = self.command(key)
        env = dict(os.environ)
        if mainpid is not None:
            env["MAINPID"] = str(mainpid)  # as systemd sets it for control processes
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
        if check and not may_fail:
            self.assertEqual(r.returncode, 0, "%s %r: %s" % (key, argv, r.stderr))
        return r

    def start(self):
        self.run_cmd("ExecStartPre")
        argv, _ = self.command("ExecStart")
        self.assertIn("-f", argv)
        d = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(lambda: d.poll() is None and d.kill())
        self.run_cmd("ExecStartPost", d.pid)  # returns once the mount answers
        for rel, data in self.want.items():
            self.assertEqual(et.read_file_raw(os.path.join(self.mnt, rel)), data, rel)
        return d

    def test_start_stop_crash_restart(self):
        d = self.start()
        d.send_signal(signal.SIGTERM)             # systemctl stop
        self.assertEqual(d.wait(timeout=60), 0, d.stderr.read())
        self.assertFalse(et.is_mounted(self.mnt))
        self.run_cmd("ExecStopPost")

        d = self.start()
        d.kill()                                 # a crash
        d.wait(timeout=60)
        self.assertTrue(et.is_mounted(self.mnt), "a dead daemon leaves its mount")
        self.run_cmd("ExecStopPost")
        self.assertFalse(et.is_mounted(self.mnt), "ExecStopPost clears a dead mount")
        d = self.start()                         # Restart=on-failure mounts again
        d.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait(timeout=60), 0)

    def test_a_mount_that_does_not_come_up_fails_the_start(self):
        self.env["LOWER"] = os.path.join(self.tmp, "missing")
        self.run_cmd("ExecStartPre")
        argv, _ = self.command("ExecStart")
        d = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.assertEqual(d.wait(timeout=60), 1)
        # The daemon has exited: ExecStartPost fails at once, not after 30 s.
        r = self.run_cmd("ExecStartPost", d.pid, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("did not come up", r.stderr)

    def test_systemd_analyze_verify(self):
        if shutil.which("systemd-analyze") is None:
            self.skipTest("no systemd-analyze")
        units = self.make_dir("units")
        text = self.text.replace(self.command("ExecStart")[0][0], et.epochfs_bin())
        for line in self.text.splitlines():
            if line.startswith("ExecStart="):
                text = text.replace(line.split()[0], "ExecStart=" + et.epochfs_bin())
        with open(os.path.join(units, "epochfs@.service"), "w") as f:
            f.write(text)
        r = subprocess.run(["systemd-analyze", "verify", "--man=no",
                            "epochfs@%s.service" % self.instance],
                           capture_output=True, text=True, cwd=units,
                           env=dict(os.environ, SYSTEMD_UNIT_PATH=units + ":"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("epochfs@", r.stderr, r.stderr)


if __name__ == "__main__":
    et.main()
