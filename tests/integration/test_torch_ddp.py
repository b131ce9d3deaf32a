#!/usr/bin/python3
"""Two ranks of a real torch.distributed run (gloo on CPU, DistributedSampler,
two processes, each with a 2-worker DataLoader) read one epochfs mount under
cache.policy=future, each rank's sampler wrapped by EpochfsSampler (jobs
ddp.rank0 and ddp.rank1). Every sample's bytes equal LOWER's; together the
ranks read each sample once per epoch; and after the warm-up epoch the two
ranks' hits per epoch are within 10 % of one job reading the whole dataset on
its own at the same budget (a fresh mount each): the ranks of a run share the
cache as one job does (docs/future_policy.md).

Exit 77 (SKIP) when torch or torch.distributed's gloo backend is missing, or
without /dev/fuse or root.
"""

import hashlib
import json
import multiprocessing
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs_test as et  # noqa: E402
import epochfs.sampler  # noqa: E402

try:
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, Dataset, DistributedSampler, RandomSampler
    if not dist.is_available() or not dist.is_gloo_available():
        raise ImportError("torch.distributed without gloo")
except Exception as e:  # noqa: BLE001 - any import failure means "no torch here"
    print("SKIP: %s" % e)
    sys.exit(et.SKIP_EXIT)

KiB = 1024
MiB = 1024 * KiB
FILES = 200
SIZE = 32 * KiB
BUDGET = 3 * MiB      # about 90 of the 200 files
EPOCHS = 4
BATCH = 10            # per rank; the single job reads batches of 2 x BATCH
SEED = 4321


class RawFiles(Dataset):
    """ROOT/data/f_NNN.raw; an item is (index, sha256 of the bytes read)."""

    def __init__(self, root):
        self.samples = [os.path.join(root, "data", "f_%03d.raw" % i) for i in range(FILES)]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, k):
        with open(self.samples[k], "rb") as f:
            return k, hashlib.sha256(f.read()).hexdigest()


def collate_list(batch):
    return batch


def run_rank(rank, mnt, init_file, out_path, want):
    """One rank: its shard of every epoch, a gradient-like all_reduce per
    batch (as DDP does, so the ranks go in step), its job's status at the end."""
    result = {"rank": rank}
    try:
        dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank,
                                world_size=2)
        ds = RawFiles(mnt)
        dsampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=SEED)
        sampler = epochfs.sampler.EpochfsSampler(dsampler, mnt, "ddp", ds.samples, BATCH, EPOCHS,
                                                 loaders=2, compute_ms=0, strict=True,
                                                 close_at_exit=False)
        loader = DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=2,
                            multiprocessing_context="fork", collate_fn=collate_list,
                            worker_init_fn=sampler.worker_init_fn)
        seen, bad = [], []
        for epoch in range(EPOCHS):
            sampler.set_epoch(epoch)
            order = []
            for batch in loader:
                for k, digest in batch:
                    order.append(k)
                    if digest != want[k]:
                        bad.append("epoch %d sample %d" % (epoch, k))
                dist.all_reduce(torch.ones(1))
            seen.append(order)
            dist.barrier()
        with open(os.path.join(sampler.job_dir, "status")) as f:
            result["status"] = json.load(f)
        result.update(job=sampler.job_name, seen=seen, bad=bad)
        dist.barrier()
        sampler.close()
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - reported to the parent, which fails the test
        result["error"] = traceback.format_exc()
    with open(out_path, "w") as f:
        json.dump(result, f)


class TorchDistributedTest(et.MountTestCase):
    def setUp(self):
        super().setUp()
        self.lower = self.make_dir("lower")
        self.want = []
        for i in range(FILES):
            data = et.det_bytes(SIZE, 5000 + i)
            et.write_file(os.path.join(self.lower, "data", "f_%03d.raw" % i), data)
            self.want.append(hashlib.sha256(data).hexdigest())

    def fresh_mount(self):
        # No prefetch: what it hits in epoch 0 depends on timing, and this
        # test compares the policy's decisions for the ranks and one job.
        return self.mount(self.lower, opts=["cache.policy=future", "cache.prefetch=0",
                                            "cache.memory=%d" % BUDGET])

    def single_job_hits(self):
        """One job, the whole dataset per epoch: its hits per epoch."""
        d = self.fresh_mount()
        ds = RawFiles(d.mnt)
        sampler = epochfs.sampler.EpochfsSampler(RandomSampler(ds), d.mnt, "single", ds.samples,
                                                 2 * BATCH, EPOCHS, loaders=2, seed=SEED,
                                                 compute_ms=0, strict=True)
        self.addCleanup(sampler.close)
        loader = DataLoader(ds, batch_size=2 * BATCH, sampler=sampler, num_workers=2,
                            multiprocessing_context="fork", collate_fn=collate_list,
                            worker_init_fn=sampler.worker_init_fn)
        for epoch in range(EPOCHS):
            for batch in loader:
                for k, digest in batch:
                    self.assertEqual(digest, self.want[k], "epoch %d sample %d" % (epoch, k))
        with open(os.path.join(sampler.job_dir, "status")) as f:
            st = json.load(f)
        sampler.close()
        self.assertEqual(d.unmount(), 0)
        self.assertEqual([e["hits"] + e["misses"] for e in st["epochs"]], [FILES] * EPOCHS, st)
        return [e["hits"] for e in st["epochs"]]

    def ddp_hits(self):
        """Two ranks in two processes: the sum of their hits per epoch."""
        d = self.fresh_mount()
        tmp = self.make_dir("ddp")
        ctx = multiprocessing.get_context("fork")
        outs = [os.path.join(tmp, "rank%d.json" % r) for r in range(2)]
        procs = [ctx.Process(target=run_rank,
                             args=(r, d.mnt, os.path.join(tmp, "init"), outs[r], self.want))
                 for r in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(300)
            if p.is_alive():
                p.kill()
                self.fail("a rank did not finish in 300 s")
        results = []
        for r, path in enumerate(outs):
            with open(path) as f:
                res = json.load(f)
            self.assertNotIn("error", res, res.get("error"))
            self.assertEqual(res["job"], "ddp.rank%d" % r)
            self.assertEqual(res["bad"], [], "rank %d read bytes that differ from LOWER" % r)
            results.append(res)
        for epoch in range(EPOCHS):
            # Together the ranks read every sample exactly once.
            both = sorted(results[0]["seen"][epoch] + results[1]["seen"][epoch])
            self.assertEqual(both, list(range(FILES)), "epoch %d" % epoch)
        self.assertEqual(d.stats()["jobs"], [])
        self.assertTrue(d.alive())
        self.assertEqual(d.unmount(), 0)
        hits = [0] * EPOCHS
        for res in results:
            st = res["status"]
            self.assertEqual(st["last_error"], "", st)
            self.assertEqual([e["epoch"] for e in st["epochs"]], list(range(EPOCHS)), st)
            for e in st["epochs"]:
                self.assertEqual(e["hits"] + e["misses"], FILES // 2, e)
                hits[e["epoch"]] += e["hits"]
        return hits

    def test_ranks_hit_like_one_job(self):
        single = self.single_job_hits()
        ddp = self.ddp_hits()
        print("\nhits per epoch: one job %s, two ranks %s (of %d files, budget %d of %d bytes)"
              % (single, ddp, FILES, BUDGET, FILES * SIZE))
        self.assertEqual(single[0], 0)
        self.assertEqual(ddp[0], 0)
        for e in range(1, EPOCHS):
            # One job keeps about a budget's worth of its next epoch.
            self.assertGreaterEqual(single[e], BUDGET // SIZE * 8 // 10, single)
            self.assertLessEqual(abs(ddp[e] - single[e]), single[e] / 10,
                                 "epoch %d: ranks %s, one job %s" % (e, ddp, single))


if __name__ == "__main__":
    et.main()
