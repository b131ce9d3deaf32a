#!/usr/bin/python3
"""The shell-only flow printed in man/epochfs-control.7 (EXAMPLES, "With a
shell"), extracted from the page and run as written against a real mount: the
documented commands must work and produce hits after the warm-up."""

import json
import os
import re
import subprocess

import epochfs_test as et

SOURCE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def shell_example():
    """The roff of the first .EX block after '.SS With a shell', as shell text."""
    page = open(os.path.join(SOURCE_ROOT, "man", "epochfs-control.7")).read()
    section = page[page.index(".SS With a shell"):]
    block = section[section.index(".EX\n") + 4:section.index(".EE\n")]
    for roff, text in (("\\-", "-"), ("\\(aq", "'"), ("\\en", "\\n"), ("\\e", "\\")):
        block = block.replace(roff, text)
    return block


def json_objects(text):
    dec, i, out = json.JSONDecoder(), 0, []
    while (j := text.find("{", i)) >= 0:
        obj, i = dec.raw_decode(text, j)
        out.append(obj)
    return out


class ManPageShellFlow(et.MountTestCase):
    def test_flow_as_documented(self):
        lower = self.make_dir("lower")
        files = {}
        for i in range(150):
            rel = os.path.join("train", "c%d" % (i % 3), "f%03d.bin" % i)
            files[rel] = et.det_bytes(1000 + 37 * i, i)
            et.write_file(os.path.join(lower, rel), files[rel])
        d = self.mount(lower, opts=["cache.policy=epoch", "warmup.batches=1", "cache.memory=64MiB"])
        script = shell_example()
        self.assertIn("mkdir $J", script)
        tmp = self.make_dir("tmp")
        script = script.replace("/tmp/", tmp + "/")
        script = re.sub(r"^M=\S+;", "M=%s;" % d.mnt, script, count=1, flags=re.M)
        r = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        statuses = json_objects(r.stdout)
        self.assertEqual(len(statuses), 3, r.stdout)
        last = statuses[-1]
        self.assertEqual(last["last_error"], "")
        self.assertEqual([e["epoch"] for e in last["epochs"]], [0, 1, 2])
        for e in last["epochs"]:
            self.assertEqual(e["hits"] + e["misses"], 150, e)   # every read counted once
        self.assertEqual(last["epochs"][0]["hits"], 0)           # warm-up reads uncached
        self.assertGreater(last["epochs"][1]["hits"] + last["epochs"][2]["hits"], 0)
        self.assertEqual(last["accesses"], 450)
        # rmdir at the end released the job: what is not free is the shared
        # region (unclaimed reads: here the warm-up batch), nothing else.
        stats = d.stats()
        self.assertEqual(stats["jobs"], [])
        self.assertEqual(stats["pool"] + stats["shared"], stats["budget"], stats)
        self.assertEqual(stats["resident"], stats["shared"], stats)
        self.assertEqual(stats["used"], stats["resident"], stats)
        for rel, data in files.items():
            self.assertEqual(et.read_file_raw(d.path(rel)), data)


if __name__ == "__main__":
    et.main()
