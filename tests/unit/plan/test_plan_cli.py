"""`epochfs plan` as a process: the plan of conf/plan/example_model.toml (by
hand in tests/unit/plan/model_file_test.cc: 626 per GPU with swapping, 124 all
resident), and bad input -> a non-zero exit with exactly one line on stderr,
nothing on stdout. Also: `epochfs` without "plan" is still the daemon's
command line."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("EPOCHFS_SOURCE_ROOT",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
EXAMPLE = os.path.join(ROOT, "conf", "plan", "example_model.toml")
EPOCHFS = os.environ.get("EPOCHFS_BIN", "")

LAYER = '[[layer]]\nname = "{name}"\nactivation_bytes = {act}\nparameter_bytes = {params}\n'


def run(*args):
    return subprocess.run([EPOCHFS, *args], capture_output=True, text=True, timeout=30)


class PlanCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assert_one_line_error(self, r, expected):
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertEqual(r.stderr, expected)

    def test_example_table(self):
        r = run("plan", EXAMPLE)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].startswith("vgg16-224-fp32: 21 layers"), lines[0])
        swap = [l for l in lines if l.startswith("layer-wise swapping")]
        allr = [l for l in lines if l.startswith("all resident")]
        self.assertEqual(swap[0].split()[2:5], ["626", "5008", "0.195625"])
        self.assertIn("(layer conv1_1 limits)", swap[0])
        self.assertEqual(allr[0].split()[2:5], ["124", "992", "0.03875"])

    def test_example_json_with_flags(self):
        # 80 GiB - 1 GiB = 84825604096 usable:
        #   swapping (84825604096 - 14336) / 25690112 = 3301.8 -> 3301; x64 = 211264;
        #   lr 0.01 * 211264 / 256 = 8.2525
        #   all (84825604096 - 1106860352) / 120696640 = 693.6 -> 693; x64 = 44352;
        #   lr 0.01 * 44352 / 256 = 1.7325
        r = run("plan", EXAMPLE, "--json", "--gpus", "64", "--device-memory", "80GiB")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["usable_bytes"], 84825604096)
        self.assertEqual((j["swapping"]["per_gpu_batch"], j["swapping"]["global_batch"]),
                         (3301, 211264))
        self.assertAlmostEqual(j["swapping"]["learning_rate"], 8.2525, places=12)
        self.assertEqual((j["all_resident"]["per_gpu_batch"], j["all_resident"]["global_batch"]),
                         (693, 44352))
        self.assertAlmostEqual(j["all_resident"]["learning_rate"], 1.7325, places=12)

    def test_layer_too_large_at_batch_one(self):
        # big: 2*100 + 2*600 = 1400 > 1000.
        m = self.write("m.toml", "[device]\nmemory = 1000\n" +
                       LAYER.format(name="ok", act=10, params=0) +
                       LAYER.format(name="big", act=600, params=100))
        self.assert_one_line_error(
            run("plan", m),
            f"epochfs plan: {m}: layer 'big' does not fit on the device even at batch 1: it "
            "needs 2*100 + 2*600 = 1400 bytes, the device has 1000 usable bytes\n")

    def test_bad_values(self):
        ok = LAYER.format(name="a", act=10, params=0)
        cases = [
            ("[device]\nmemory = -1\n" + ok,
             ":2: device.memory: expected bytes > 0 (integer or \"16GiB\"), got -1"),
            ("[device]\nmemory = 100\n" + LAYER.format(name="a", act=0, params=0),
             ":5: layer[1].activation_bytes: expected bytes per sample > 0 (integer or "
             "\"12KiB\"), got 0"),
            ("[device]\nmemory = 100\n[[layer]]\nname = \"a\"\nactivation_bytes = 1\n",
             ":3: layer[1] (a): parameter_bytes missing (0 for a layer without parameters)"),
            ("[device]\nmemory = 100\n", ": no [[layer]] tables: the model has no layers"),
            ("[device]\nmemory = 100\n[training]\nbase_batch = 8\n" + ok,
             ": a base batch needs a base learning rate (base_lr, --base-lr)"),
            ("[device\n", ":1:8: TOML syntax error: "),
        ]
        for i, (text, expected) in enumerate(cases):
            m = self.write(f"bad{i}.toml", text)
            r = run("plan", m)
            with self.subTest(text=text):
                self.assertNotEqual(r.returncode, 0)
                self.assertEqual(r.stdout, "")
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
                self.assertTrue(r.stderr.startswith(f"epochfs plan: {m}{expected}"), r.stderr)

    def test_bad_flags(self):
        self.assert_one_line_error(
            run("plan", EXAMPLE, "--gpus", "-2"),
            "epochfs plan: --gpus: expected an integer 1..1048576, got '-2'\n")
        self.assert_one_line_error(
            run("plan", EXAMPLE, "--device-memory", "16 gigs"),
            "epochfs plan: --device-memory: expected bytes > 0 (an integer or \"16GiB\"), "
            "got '16 gigs'\n")
        self.assert_one_line_error(
            run("plan", EXAMPLE, "--reserve", "16GiB"),
            f"epochfs plan: {EXAMPLE}: the reserve (17179869184 bytes) leaves nothing of the "
            "device memory (17179869184 bytes)\n")
        r = run("plan")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("MODEL", r.stderr)

    def test_daemon_command_line_unchanged(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith("epochfs "), r.stdout)
        r = run("/nonexistent-lower")  # MOUNTPOINT missing: the daemon's parser says so
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("MOUNTPOINT", r.stderr)


if __name__ == "__main__":
    if not EPOCHFS:
        print("SKIP: EPOCHFS_BIN not set")
        sys.exit(77)
    unittest.main()
