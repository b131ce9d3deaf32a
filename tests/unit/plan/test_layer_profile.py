"""scripts/layer_profile.py on known models: the exact bytes it writes (computed
by hand below), then `epochfs plan` on that file. SKIP (77) without torch.

The built-in example CNN, input 3x32x32 float32, batch 4:
  layer    output          activation bytes/sample   parameters                  bytes
  conv1    8x32x32         8192*4  = 32768           8*3*3*3 + 8   = 224         896
  relu1    8x32x32         32768                     0
  pool1    8x16x16         2048*4  = 8192            0
  conv2    16x16x16        4096*4  = 16384           16*8*3*3 + 16 = 1168        4672
  relu2    16x16x16        16384                     0
  pool2    16x8x8          1024*4  = 4096            0
  flatten  1024            4096                      0
  fc       10              10*4    = 40              1024*10 + 10  = 10250       41000
Plan with 1 MiB = 1048576 bytes, copies 2 and 2, 4 GPUs, base 32 @ 0.1:
  swapping: conv1 (1048576 - 1792) / 65536 = 15.97 -> 15 (relu1 16, pool1 64,
            conv2 (1048576 - 9344)/32768 = 31, relu2 32, pool2 128, flatten 128,
            fc (1048576 - 82000)/80 = 12082); global 60; lr 0.1*60/32 = 0.1875
  all resident: Σp = 46568, Σa = 114728:
            (1048576 - 93136) / 229456 = 4.16 -> 4; global 16; lr 0.05
"""

import json
import os
import subprocess
import sys
import tempfile
import tomllib
import unittest

ROOT = os.environ.get("EPOCHFS_SOURCE_ROOT",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "layer_profile.py")
EPOCHFS = os.environ.get("EPOCHFS_BIN", "")

EXPECTED = [
    ("conv1", 32768, 896),
    ("relu1", 32768, 0),
    ("pool1", 8192, 0),
    ("conv2", 16384, 4672),
    ("relu2", 16384, 0),
    ("pool2", 4096, 0),
    ("flatten", 4096, 0),
    ("fc", 40, 41000),
]

# A module called twice, and a parameter owned by a module with children.
SHARED_MODEL = '''
import torch
import torch.nn as nn


class Shared(nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return self.fc(self.fc(x)) * self.scale
'''


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=240, **kw)


def layers_of(doc):
    return [(l["name"], l["activation_bytes"], l["parameter_bytes"]) for l in doc["layer"]]


class LayerProfileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_example_cnn_bytes_and_plan(self):
        out = self.path("cnn.toml")
        r = run([sys.executable, SCRIPT, "--example", "--batch", "4", "--device-memory", "1MiB",
                 "--gpus", "4", "--base-batch", "32", "--base-lr", "0.1", "-o", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        with open(out, "rb") as f:
            doc = tomllib.load(f)
        self.assertEqual(layers_of(doc), EXPECTED)
        self.assertEqual(doc["model"], {"name": "ExampleCNN"})
        self.assertEqual(doc["device"], {"memory": "1MiB", "gpus": 4})
        self.assertEqual(doc["training"], {"base_batch": 32, "base_lr": 0.1})

        if not EPOCHFS:
            self.skipTest("EPOCHFS_BIN not set")
        r = run([EPOCHFS, "plan", out, "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        plan = json.loads(r.stdout)
        self.assertEqual(plan["parameter_bytes"], 46568)
        self.assertEqual(plan["activation_bytes_per_sample"], 114728)
        self.assertEqual(plan["swapping"]["per_gpu_batch"], 15)
        self.assertEqual(plan["swapping"]["limiting_layer"], "conv1")
        self.assertEqual(plan["swapping"]["global_batch"], 60)
        self.assertEqual(plan["swapping"]["learning_rate"], 0.1875)
        self.assertEqual(plan["swapping"]["resident_bytes"], 2 * 896 + 15 * 2 * 32768)
        self.assertEqual(plan["all_resident"]["per_gpu_batch"], 4)
        self.assertEqual(plan["all_resident"]["global_batch"], 16)
        self.assertEqual(plan["all_resident"]["learning_rate"], 0.05)

    def test_batch_size_does_not_change_per_sample_bytes(self):
        r = run([sys.executable, SCRIPT, "--example", "--batch", "3"])
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = tomllib.loads(r.stdout)
        self.assertEqual(layers_of(doc), EXPECTED)
        self.assertNotIn("device", doc)  # nothing given, nothing written
        self.assertNotIn("training", doc)

    def test_float64_doubles_every_byte(self):
        r = run([sys.executable, SCRIPT, "--example", "--dtype", "float64"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(layers_of(tomllib.loads(r.stdout)),
                         [(n, 2 * a, 2 * p) for n, a, p in EXPECTED])

    def test_model_from_a_file_shared_module_and_unowned_parameter(self):
        src = self.path("shared_net.py")
        with open(src, "w") as f:
            f.write(SHARED_MODEL)
        # Linear(4, 4): output 4 floats = 16 bytes per sample; (16 + 4) * 4 = 80
        # parameter bytes, on its first call only; the second call is fc#2.
        r = run([sys.executable, SCRIPT, "--model", src + ":Shared", "--model-args",
                 '{"width": 4}', "--input-shape", "4", "--batch", "2", "--name", "shared",
                 "--parameter-copies", "4", "--activation-copies", "1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = tomllib.loads(r.stdout)
        self.assertEqual(layers_of(doc), [("fc", 16, 80), ("fc#2", 16, 0)])
        self.assertEqual(doc["model"],
                         {"name": "shared", "parameter_copies": 4, "activation_copies": 1})
        # `scale` (4 floats = 16 bytes) is the root's own: reported, in no layer.
        self.assertIn("Shared: 16 parameter bytes owned by a module with children", r.stderr)

    def test_bad_arguments(self):
        r = run([sys.executable, SCRIPT, "--model", "nosuchmodule:Net", "--input-shape", "4"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("nosuchmodule", r.stderr)
        r = run([sys.executable, SCRIPT, "--model", "torch.nn:Linear"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--input-shape is required with --model", r.stderr)
        r = run([sys.executable, SCRIPT, "--example", "--batch", "0"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--batch", r.stderr)


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: torch is not installed (Debian: python3-torch)")
        sys.exit(77)
    unittest.main()
