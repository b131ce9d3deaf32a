#!/usr/bin/python3
"""The recipes beyond PyTorch's sampler (scripts/examples/), on a real mount,
with the epochfs package as pip installs it:

- tf.data and JAX/Grain (tfdata_epochfs.py, grain_epochfs.py): neither
  framework is here, so each runs with a stub of the few calls it makes
  (tf.data.Dataset.from_tensor_slices/map/batch, tf.io.read_file;
  grain.MapDataset.source/map/batch); what is tested is the epochfs part:
  every file read once per epoch in the declared permutation, byte-exact,
  and the job's status: epoch 0 all misses, later epochs all hits, the next
  epoch declared during each;
- the WebDataset-style shard loop (webdataset_epochfs.py, tarfile only):
  every sample of every shard byte-exact, shards read in the declared order,
  one access per shard: epoch 0 all misses, later epochs all hits; the job
  is gone when the loop ends.

cache.prefetch = 0: a prefetched file's first read would be a hit, and the
counts would depend on how far the prefetch got.
"""

import io
import os
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs_test as et  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "scripts", "examples")
sys.path.insert(0, EXAMPLES)
import grain_epochfs  # noqa: E402
import tfdata_epochfs  # noqa: E402
import webdataset_epochfs  # noqa: E402

EPOCHS = 3
OPTS = ["cache.prefetch=0", "cache.memory=64MiB"]


class Reads:
    """Records what the stubs read, in order."""

    def __init__(self):
        self.paths = []

    def read(self, path):
        self.paths.append(path)
        with open(path, "rb") as f:
            return f.read()


class StubDataset:
    """The calls the recipes make of tf.data.Dataset and grain.MapDataset."""

    def __init__(self, items):
        self.items = list(items)

    def map(self, fn):
        return StubDataset(fn(x) for x in self.items)

    def batch(self, n):
        return StubDataset(self.items[i:i + n] for i in range(0, len(self.items), n))

    def __iter__(self):
        return iter(self.items)


def stub_tf(reads):
    tf = type(sys)("tensorflow")
    tf.data = type(sys)("tensorflow.data")
    tf.data.Dataset = type("Dataset", (), {"from_tensor_slices": staticmethod(StubDataset)})
    tf.io = type(sys)("tensorflow.io")
    tf.io.read_file = reads.read
    return tf


def stub_grain(reads):
    grain = type(sys)("grain")
    grain.MapDataset = type("MapDataset", (), {"source": staticmethod(StubDataset)})
    grain_epochfs.read_file = reads.read  # the recipe's reader, recorded
    return grain


class RecipesTest(et.MountTestCase):
    def files_dataset(self):
        lower = self.make_dir("lower")
        want = {}
        for i in range(24):
            rel = "train/c%d/s%02d.raw" % (i % 3, i)
            want[rel] = et.det_bytes(3000 + 211 * i, 40 + i)
            et.write_file(os.path.join(lower, rel), want[rel])
        return lower, want

    def job_status(self, d, name):
        return epochfs_job(d, name).status()

    def assert_epoch_counts(self, st, epoch, n):
        by_epoch = {e["epoch"]: e for e in st["epochs"]}
        e = by_epoch[epoch]
        want = (0, n) if epoch == 0 else (n, 0)
        self.assertEqual((e["hits"], e["misses"]), want, st)
        if epoch + 1 < EPOCHS:
            self.assertIn(epoch + 1, st["declared_epochs"], st)

    def run_files_recipe(self, name, make_fw, epoch_dataset):
        lower, want = self.files_dataset()
        d = self.mount(lower, opts=OPTS)
        reads = Reads()
        fw = make_fw(reads)
        files = tfdata_epochfs.list_files(d.mnt, "train")
        self.assertEqual(len(files), len(want))
        epochs = tfdata_epochfs.declared_epochs(d.mnt, "train", name, 4, EPOCHS, seed=5)
        for epoch, paths in epochs:
            del reads.paths[:]
            batches = list(epoch_dataset(fw, paths, 4))
            self.assertEqual(len(batches), len(want) // 4)
            got = [x for b in batches for x in b]
            order = tfdata_epochfs.permutation(len(files), 5, epoch)
            self.assertEqual(reads.paths, [os.path.join(d.mnt, "train", files[i]) for i in order])
            self.assertEqual(got, [want["train/" + files[i]] for i in order])
            self.assert_epoch_counts(self.job_status(d, name), epoch, len(want))
        self.assertFalse(epochfs_job(d, name).exists())  # removed with the loop's end
        st = d.stats()
        self.assertEqual((st["misses"], st["hits"]), (len(want), len(want) * (EPOCHS - 1)), st)
        self.assertEqual(d.unmount(), 0)

    def test_tf_data(self):
        self.run_files_recipe("tfdata", stub_tf, tfdata_epochfs.epoch_dataset)

    def test_grain(self):
        self.run_files_recipe("grain", stub_grain, grain_epochfs.epoch_dataset)

    def test_webdataset_shards(self):
        lower = self.make_dir("lower")
        shards, want = 5, {}
        os.makedirs(os.path.join(lower, "shards"))
        for s in range(shards):
            name = "shard-%06d.tar" % s
            with tarfile.open(os.path.join(lower, "shards", name), "w") as tar:
                for j in range(4):
                    key = "%06d" % (s * 4 + j)
                    sample = {"bin": et.det_bytes(5000 + 97 * j, s * 10 + j),
                              "cls": b"%d" % (j % 2)}
                    want[key] = (name, sample)
                    for ext, data in sample.items():
                        info = tarfile.TarInfo("%s.%s" % (key, ext))
                        info.size = len(data)
                        tar.addfile(info, io.BytesIO(data))
        d = self.mount(lower, opts=OPTS)
        names = webdataset_epochfs.list_shards(d.mnt, "shards")
        loop = webdataset_epochfs.epochs_of_shards(d.mnt, "shards", "wds", EPOCHS, seed=9)
        seen = {k: [] for k in range(EPOCHS)}
        checked = []
        for epoch, shard, key, sample in loop:
            self.assertEqual((shard, sample), want[key], key)
            if not seen[epoch] or seen[epoch][-1] != shard:
                seen[epoch].append(shard)
            if len(seen[epoch]) == shards and key == max(
                    k for k, v in want.items() if v[0] == shard):
                # The epoch's last sample: its counts, before the next epoch.
                self.assert_epoch_counts(self.job_status(d, "wds"), epoch, shards)
                checked.append(epoch)
        self.assertEqual(checked, list(range(EPOCHS)))
        for epoch in range(EPOCHS):
            order = webdataset_epochfs.shard_order(shards, 9, epoch)
            self.assertEqual(seen[epoch], [names[i] for i in order], epoch)
        self.assertFalse(epochfs_job(d, "wds").exists())
        st = d.stats()
        self.assertEqual((st["misses"], st["hits"]), (shards, shards * (EPOCHS - 1)), st)
        self.assertEqual(d.unmount(), 0)


def epochfs_job(d, name):
    import epochfs
    return epochfs.Job(d.mnt, name)


if __name__ == "__main__":
    et.main()
