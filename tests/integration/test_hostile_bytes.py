#!/usr/bin/python3
"""Hostile bytes into every control file of a shared mount (allow_other).

Every file of `.epochfs/jobs/NAME/` that accepts writes gets, from its owner
and from a second user (nobody), input that no parser expects: random bytes,
invalid UTF-8, NUL bytes, a 1 MiB line, only separators, an empty file, a
sparse write at a large offset. Asserted after each write: the daemon is
alive; `status` of the job and `.epochfs/stats` are valid JSON; every file of
the dataset still reads back byte-exact; the other user's writes were refused
and changed nothing.

Also the crash of issue 12: a spill file whose name is not UTF-8, named in
`spill_schedule` and made resident by `progress`, used to make the next read
of `status` throw from the JSON writer and end the daemon. Its name must now
come out with U+FFFD in place of the bad byte.

Standard library only; exit 77 (SKIP) without /dev/fuse or root.
"""

import json
import os
import random

import epochfs_test as et

NOBODY = 65534
KiB = 1024
CONTROL_FILES = ["config", "samples", "order/0", "order/1", "epoch", "progress", "pids",
                 "spill_schedule"]


def payloads():
    rng = random.Random(12)
    return {
        "random": rng.randbytes(4096),
        "invalid-utf8": b"\xff\xfe\xfd\n\xc3\x28\n\xa0\xa1\n\xe2\x28\xa1\n",
        "nul": b"a\x00b\n\x00\x00\n1\x00\n",
        "long-line": b"9" * (1 << 20) + b"\n",
        "separators": b"\n\r\t \n\n,,;;==\n",
        "empty": b"",
        "toml-ish": b'batch_size = "\xff"\n[x\xff]\nroot = "\\u0000"\nepochs = 1e999\n',
        "numbers": b"-1\n18446744073709551616\n0x10\n1e3\n+7\n",
    }


def write_ctl(path, data):
    """One control-file write; the errno of whichever step failed, or 0."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except OSError as e:
        return e.errno
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view[:1 << 20])
            view = view[n:]
    except OSError as e:
        try:
            os.close(fd)
        except OSError:
            pass
        return e.errno
    try:
        os.close(fd)
    except OSError as e:
        return e.errno
    return 0


def sparse_write(path, offset):
    """A 1-byte pwrite at `offset`; the errno of the failing step, or 0."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return e.errno
    err = 0
    try:
        os.pwrite(fd, b"1", offset)
    except OSError as e:
        err = e.errno
    try:
        os.close(fd)
    except OSError as e:
        err = err or e.errno
    return err


class HostileBytesTest(et.MountTestCase):
    maxDiff = None

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        os.chmod(self.tmp, 0o755)
        os.chmod(self.lower, 0o755)
        self.want = {}
        for i in range(20):
            rel = "d/f%02d.bin" % i
            data = et.det_bytes(3 * KiB + i, i)
            et.write_file(os.path.join(self.lower, rel), data)
            self.want[rel] = data
        os.chmod(os.path.join(self.lower, "d"), 0o755)
        for rel in self.want:
            os.chmod(os.path.join(self.lower, rel), 0o644)
        spill = self.make_dir("spill")
        self.d = self.mount(self.lower, opts=["cache.policy=epoch", "allow_other",
                                              "spill.path=" + spill])

    @staticmethod
    def read_status(jd):
        with open(os.path.join(jd, "status"), "rb") as f:
            return json.loads(f.read().decode("utf-8"))

    def check_alive(self, jd, what):
        d = self.d
        self.assertTrue(d.alive(), "%s: the daemon died; stderr:\n%s" % (what, d.stderr_text()))
        st = d.stats()
        self.assert_stats_sane(st)
        status = self.read_status(jd)
        for rel, data in self.want.items():
            self.assertEqual(et.read_file_raw(d.path(rel)), data, "%s: %s" % (what, rel))
        return status

    def test_every_control_file_survives_hostile_bytes(self):
        jd = self.d.path(".epochfs", "jobs", "victim")
        os.mkdir(jd)
        # A valid declaration first: what the hostile writes must not change.
        self.assertEqual(write_ctl(os.path.join(jd, "config"), b"batch_size = 4\nepochs = 2\nroot = \"d\"\n"), 0)
        self.assertEqual(write_ctl(os.path.join(jd, "samples"),
                                   "".join("f%02d.bin\n" % i for i in range(20)).encode()), 0)
        self.assertEqual(write_ctl(os.path.join(jd, "order", "0"),
                                   " ".join(map(str, range(20))).encode() + b"\n"), 0)
        declared = self.check_alive(jd, "valid declaration")
        self.assertEqual(declared["samples"], 20)
        self.assertEqual(declared["declared_epochs"], [0])

        for name in CONTROL_FILES:
            path = os.path.join(jd, *name.split("/"))
            for kind, data in payloads().items():
                what = "%s <- %s" % (name, kind)
                # Another user: refused, and nothing changes.
                # (`last_error` tells the owner that another user was refused.)
                before = self.read_status(jd)
                before.pop("last_error")

                def attempt():
                    err = write_ctl(path, data) or sparse_write(path, 0)
                    if err:
                        raise OSError(err, "refused")
                err = et.as_user(NOBODY, NOBODY, attempt)
                self.assertNotEqual(err, 0, "nobody could write %s" % what)
                after = self.read_status(jd)
                after.pop("last_error")
                self.assertEqual(after, before, "nobody changed the job: " + what)
                self.check_alive(jd, "nobody: " + what)
                # The owner: accepted or refused, the daemon carries on.
                write_ctl(path, data)
                self.check_alive(jd, "owner: " + what)
            for offset in (1 << 20, 1 << 30, (1 << 40) - 1):
                sparse_write(path, offset)
                self.check_alive(jd, "owner: %s <- 1 byte at %d" % (name, offset))

    def test_a_spill_name_that_is_not_utf8_in_status(self):
        jd = self.d.path(".epochfs", "jobs", "bytes")
        os.mkdir(jd)
        bad = b"act\xffl0"
        data = et.det_bytes(300 * KiB, 7)
        with open(os.path.join(os.fsencode(self.d.mnt), b".spill", bad), "wb") as f:
            f.write(data)
        self.assertEqual(write_ctl(os.path.join(jd, "spill_schedule"), bad + b"\n" + bad + b"\n"), 0)
        self.assertEqual(write_ctl(os.path.join(jd, "progress"), b"0\n"), 0)
        status = self.check_alive(jd, "non-UTF-8 spill name")
        self.assertIn("spill", status)
        text = json.dumps(status, ensure_ascii=False)
        self.assertNotIn("\udcff", text)
        with open(os.path.join(os.fsencode(self.d.mnt), b".spill", bad), "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertTrue(self.d.alive())
        self.assertEqual(self.d.unmount(), 0)


if __name__ == "__main__":
    et.main()
