#!/usr/bin/python3
"""A real torch DataLoader (num_workers=2, fork) reading an ImageFolder-style
dataset through an epochfs mount (cache.policy=epoch), its sampler wrapped by
the epochfs package's EpochfsSampler as pip installed it into a venv
(tests/python_venv.py): every sample's bytes equal LOWER's (a SHA-256 per
sample index), the batches come in the order the wrapper declared, the job's
status counts what was read, and epochs after the warm-up hit the cache.

Exit 77 (SKIP) when `import torch` fails, or without /dev/fuse or root.
"""

import hashlib
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs_test as et  # noqa: E402
import epochfs.sampler  # noqa: E402

try:
    import torch
    from torch.utils.data import DataLoader, Dataset, RandomSampler
except Exception as e:  # noqa: BLE001 - any import failure means "no torch here"
    print("SKIP: import torch failed: %s" % e)
    sys.exit(et.SKIP_EXIT)

KiB = 1024
MiB = 1024 * KiB


class RawFolder(Dataset):
    """ImageFolder-like: ROOT/CLASS/FILE; `samples` is [(path, class)] as in
    torchvision's ImageFolder.samples. An item is the file's raw bytes as a
    uint8 tensor, with its index, class and the loading process's pid."""

    def __init__(self, root):
        self.classes = sorted(c for c in os.listdir(root)
                              if os.path.isdir(os.path.join(root, c)))
        self.samples = [(os.path.join(root, c, f), i)
                        for i, c in enumerate(self.classes)
                        for f in sorted(os.listdir(os.path.join(root, c)))]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, k):
        path, label = self.samples[k]
        with open(path, "rb") as f:
            data = f.read()
        return k, torch.frombuffer(bytearray(data), dtype=torch.uint8), label, os.getpid()


def collate_list(batch):
    """Samples differ in size: keep the batch a list."""
    return batch


class TorchDataLoaderTest(et.MountTestCase):
    CLASSES = ("cat", "dog", "eel")
    PER_CLASS = 40
    BATCH = 8
    EPOCHS = 3
    SEED = 1234
    BUDGET = 2 * MiB

    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        rng = random.Random(77)
        self.lower_hash = {}  # rel path -> sha256
        for ci, c in enumerate(self.CLASSES):
            for i in range(self.PER_CLASS):
                size = rng.choice([rng.randint(0, 2 * KiB), rng.randint(2 * KiB, 40 * KiB),
                                   rng.randint(40 * KiB, 130 * KiB)])
                rel = os.path.join("imgs", c, "img_%03d.raw" % i)
                data = et.det_bytes(size, 100 * ci + i)
                et.write_file(os.path.join(self.lower, rel), data)
                self.lower_hash[rel] = hashlib.sha256(data).hexdigest()

    def status(self, sampler):
        with open(os.path.join(sampler.job_dir, "status")) as f:
            return json.load(f)

    def test_dataloader_through_wrapper(self):
        d = self.mount(self.lower, opts=["cache.policy=epoch", "warmup.batches=2",
                                         "cache.memory=%d" % self.BUDGET])
        ds = RawFolder(d.path("imgs"))
        n = len(ds)
        self.assertEqual(n, len(self.CLASSES) * self.PER_CLASS)
        want = [self.lower_hash[os.path.relpath(p, d.mnt)] for p, _ in ds.samples]

        # compute_ms = 0: this loop does no real compute; without it the policy
        # infers compute from the batch intervals (Python overhead), which for
        # these small files makes e = 0 and nothing would be admitted.
        sampler = epochfs.sampler.EpochfsSampler(RandomSampler(ds), d.mnt, "torchjob", ds.samples,
                                     self.BATCH, self.EPOCHS, loaders=2, seed=self.SEED,
                                     compute_ms=0)
        self.addCleanup(sampler.close)
        st = self.status(sampler)
        self.assertEqual(st["samples"], n)
        self.assertIn(os.getpid(), st["pids"])
        with open(os.path.join(sampler.job_dir, "config")) as f:
            self.assertIn('root = "imgs"', f.read())

        loader = DataLoader(ds, batch_size=self.BATCH, sampler=sampler, num_workers=2,
                            multiprocessing_context="fork", collate_fn=collate_list,
                            worker_init_fn=sampler.worker_init_fn)
        bad, worker_pids, statuses = [], set(), []
        for epoch in range(self.EPOCHS):
            seen = []
            for b, batch in enumerate(loader):
                for k, x, label, pid in batch:
                    seen.append(k)
                    worker_pids.add(pid)
                    got = hashlib.sha256(x.numpy().tobytes()).hexdigest()
                    if got != want[k]:
                        bad.append("epoch %d sample %d (%s): %d bytes, hash differs" % (
                            epoch, k, ds.samples[k][0], x.numel()))
                    self.assertEqual(label, ds.samples[k][1])
                if b == 0:
                    # The worker that loaded this batch registered itself.
                    pid = batch[0][3]
                    self.assertNotEqual(pid, os.getpid())
                    st = self.status(sampler)
                    self.assertIn(pid, st["pids"], "worker_init_fn did not register worker "
                                  "%d (epoch %d): %r" % (pid, epoch, st))
            # The DataLoader yields the order the wrapper declared.
            self.assertEqual(seen, epochfs.sampler._torch_randperm(n, self.SEED + epoch), "epoch %d" % epoch)
            st = self.status(sampler)
            statuses.append(st)
            self.assertEqual(st["epoch"], epoch, st)
            self.assertEqual(st["last_error"], "", st)
            self.assertEqual(st["accesses"], n * (epoch + 1), st)
            self.assertEqual(st["hits"] + st["misses"], n, st)
            if epoch + 1 < self.EPOCHS:
                self.assertIn(epoch + 1, st["declared_epochs"], st)
        self.assertEqual(bad[:10], [], "%d samples differ from LOWER" % len(bad))
        self.assertGreaterEqual(len(worker_pids), 2, "fewer than 2 loader processes")

        st = self.status(sampler)
        epochs = st["epochs"]
        print("\nper-epoch (epoch, hits, misses): %s; after each epoch: %s" % (
            [(e["epoch"], e["hits"], e["misses"]) for e in epochs],
            [{k: s.get(k) for k in ("state", "e", "lambda", "rank", "reserved_bytes")}
             for s in statuses]))
        self.assertEqual([e["epoch"] for e in epochs], list(range(self.EPOCHS)), st)
        for e in epochs:
            self.assertEqual(e["hits"] + e["misses"], n, e)
        self.assertEqual(epochs[0]["hits"], 0, epochs)
        for e in epochs[1:]:
            self.assertGreater(e["hits"], 0, "no hits in epoch %d (after the warm-up): %r"
                               % (e["epoch"], epochs))
        self.assertEqual(st["state"], "done", st)
        for k in ("cur_bytes", "next_bytes", "tail_bytes", "granted_unused_bytes"):
            self.assertEqual(st[k], 0, "%s after the last epoch: %r" % (k, st))

        stats = d.stats()
        self.assert_stats_sane(stats)
        self.assertEqual([j["name"] for j in stats["jobs"]], ["torchjob"])
        # Every dataset read was the job's: the store's counters agree.
        self.assertEqual((stats["hits"], stats["misses"]),
                         (sum(e["hits"] for e in epochs), sum(e["misses"] for e in epochs)))

        sampler.close()
        self.assertFalse(os.path.exists(sampler.job_dir))
        stats = d.stats()
        self.assertEqual(stats["jobs"], [])
        # No job left: what is not in the pool is the shared region (the idle
        # pool lent to objects no job claims), all of it resident.
        shared = stats.get("shared", stats["resident"])
        self.assertEqual(stats["pool"] + shared, stats["budget"], stats)
        self.assertEqual(stats["resident"], shared, stats)
        self.assertLessEqual(stats["used"], shared, stats)
        self.assertTrue(d.alive())
        self.assertEqual(d.unmount(), 0)


if __name__ == "__main__":
    et.main()
