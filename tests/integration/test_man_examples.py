#!/usr/bin/env python3
"""The EXAMPLES of the man pages, run as written.

Each `.EX`/`.EE` block of a page's EXAMPLES section is taken from the roff
source (escapes undone), its paths pointed at a temp dataset and mountpoint
(/nfs/imagenet, /mnt/imagenet, /etc/epochfs/), `epochfs` at the build's
binary, and run; what the text promises is checked (the mount comes up with
the options shown, the control session runs to its end, the refused write
gives the status line shown). A page whose examples change without this
test following fails here. The PyTorch example is scripts/examples/example_train.py,
run through the mount with the pip-installed package (tests/python_venv.py).

SKIP (77) when not root or without /dev/fuse.
"""

import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs_test as et  # noqa: E402

GiB = 1 << 30


def examples(page):
    """The .EX blocks of the EXAMPLES section of man/PAGE, as plain text."""
    with open(os.path.join(et.REPO, "man", page)) as f:
        roff = f.read()
    section = roff.split("\n.SH EXAMPLES\n", 1)[1].split("\n.SH ", 1)[0]
    blocks = re.findall(r"^\.EX\n(.*?)^\.EE$", section, re.S | re.M)
    out = []
    for b in blocks:
        for a, z in (("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\&", ""), ("\\e", "\\")):
            b = b.replace(a, z)
        out.append(b)
    return out


class ManExamplesTest(et.MountTestCase):

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("nfs")
        for c in range(3):
            for i in range(8):
                et.write_file(os.path.join(self.lower, "train", "c%d" % c, "f%d.bin" % i),
                              et.det_bytes(3000 + 100 * i, 10 * c + i))
        self.mnt = self.make_mountpoint()
        self.bindir = self.make_dir("bin")
        os.symlink(et.epochfs_bin(), os.path.join(self.bindir, "epochfs"))
        self.env = dict(os.environ, PATH=self.bindir + ":" + os.environ["PATH"])

    def local(self, text):
        return (text.replace("/nfs/imagenet", self.lower).replace("/mnt/imagenet", self.mnt)
                .replace("/etc/epochfs/", os.path.join(self.tmp, "etc-epochfs", "")))

    def etc(self, name):
        """Where the examples' /etc/epochfs/NAME is."""
        os.makedirs(os.path.join(self.tmp, "etc-epochfs"), exist_ok=True)
        return os.path.join(self.tmp, "etc-epochfs", name)

    def sh(self, script, check=True):
        r = subprocess.run(["bash", "-c", self.local(script)], capture_output=True, text=True,
                           env=self.env, timeout=300)
        if check:
            self.assertEqual(r.returncode, 0, "%s\nstdout: %s\nstderr: %s" % (
                script, r.stdout, r.stderr))
        return r

    def stats(self):
        with open(os.path.join(self.mnt, ".epochfs", "stats")) as f:
            return json.load(f)

    def test_epochfs_8(self):
        fg, with_config = examples("epochfs.8")
        # In the foreground: the command runs until unmounted.
        d = subprocess.Popen(["bash", "-c", "exec " + self.local(fg)], env=self.env,
                             stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: d.poll() is None and d.kill())
        self.assertTrue(et.wait_for(lambda: et.is_mounted(self.mnt) or d.poll() is not None,
                                    60), "no mount")
        self.assertTrue(et.wait_for(lambda: os.path.exists(
            os.path.join(self.mnt, ".epochfs", "stats")), 60))
        self.assertEqual(self.stats()["budget"], 8 * GiB)
        self.sh("fusermount3 -u /mnt/imagenet")
        self.assertEqual(d.wait(timeout=60), 0, d.stderr.read())
        # With the configuration file of epochfs.toml(5) and other users allowed.
        with open(self.etc("imagenet.toml"), "w") as f:
            f.write(examples("epochfs.toml.5")[0])
        r = self.sh(with_config)
        st = json.loads(r.stdout)
        self.assertEqual((st["budget"], st["policy"]), (40 * GiB, "epoch"))
        self.assertFalse(et.is_mounted(self.mnt))

    def test_epochfs_toml_5(self):
        toml, cmdline = examples("epochfs.toml.5")
        with open(self.etc("epochfs.toml"), "w") as f:
            f.write(toml)
        seen = []
        for cmd in ("epochfs --config /etc/epochfs/epochfs.toml /nfs/imagenet /mnt/imagenet", cmdline):
            self.sh(cmd)  # in the background once the mount answers
            st = self.stats()
            seen.append((st["budget"], st["policy"]))
            self.sh("fusermount3 -u /mnt/imagenet")
            et.wait_for(lambda: not et.is_mounted(self.mnt), 30)
        self.assertEqual(seen, [(40 * GiB, "epoch")] * 2, "the file and the -o line agree")

    def test_epochfs_control_7(self):
        session, refused, torch_lines = examples("epochfs-control.7")
        self.sh("epochfs -o cache.policy=epoch /nfs/imagenet /mnt/imagenet")
        self.addCleanup(subprocess.run, ["fusermount3", "-u", self.mnt], capture_output=True)
        r = self.sh(session)
        statuses, rest, dec = [], r.stdout, json.JSONDecoder()
        while "{" in rest:  # `cat $J/status; echo`: one JSON object per epoch
            obj, end = dec.raw_decode(rest[rest.index("{"):])
            statuses.append(obj)
            rest = rest[rest.index("{") + end:]
        self.assertEqual([s["epoch"] for s in statuses], [0, 1, 2], r.stdout)
        self.assertEqual([s["last_error"] for s in statuses], [""] * 3)
        self.assertEqual(statuses[-1]["accesses"], 3 * 24)  # every file, each epoch
        self.assertEqual(rest.split(), ["2"])  # ls $J/order: finished epochs are forgotten
        self.assertEqual(os.listdir(os.path.join(self.mnt, ".epochfs", "jobs")), [])

        # The refused write: a job of 3 epochs, then the transcript's commands.
        lines = refused.strip().splitlines()
        cmds = [l[2:] for l in lines if l.startswith("$ ")]
        want = [l for l in lines if not l.startswith("$ ")]
        r = self.sh("M=/mnt/imagenet; J=$M/.epochfs/jobs/demo; mkdir $J; echo $$ > $J/pids; "
                    "printf 'batch_size = 4\\nepochs = 3\\n' > $J/config; "
                    "echo train/c0/f0.bin > $J/samples; "
                    + "; ".join(cmds + ["rmdir $J"]), check=False)
        self.assertEqual(r.stdout.splitlines(), want, r.stderr)

        # The PyTorch lines are those of scripts/examples/example_train.py; it runs.
        example = os.path.join(et.REPO, "scripts", "examples", "example_train.py")
        with open(example) as f:
            script = f.read()
        for line in torch_lines.splitlines():
            if line.startswith("from ") or line.startswith("sampler.close"):
                self.assertIn(line.strip(), script)
        r = subprocess.run([sys.executable, example,
                            os.path.join(self.mnt, "train"), "--mount", self.mnt,
                            "--epochs", "2", "--batch-size", "4"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"epoch 0: loss [0-9.]+\nepoch 1: loss [0-9.]+\n")
        self.assertEqual(os.listdir(os.path.join(self.mnt, ".epochfs", "jobs")), [])


if __name__ == "__main__":
    et.main()
