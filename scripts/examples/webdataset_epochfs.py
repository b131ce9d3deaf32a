#!/usr/bin/env python3
"""A WebDataset-style loop over tar shards on an epochfs mount, with Python's tarfile.

The dataset is shards (tar files: the members of one sample share a name
up to the first dot, "000123.jpg", "000123.cls"); an epoch reads every
shard once, in a shuffled order, each from start to end. The shards are
the job's samples: each epoch's shard order (and the next one's) is
declared through epochfs.Job before the first read, so the cache keeps and
loads whole shards in the order they are read.

    python3 webdataset_epochfs.py /mnt/epochfs shards --epochs 3

No third-party module: tarfile streams each shard (mode "r|").
"""

import argparse
import os
import random
import sys
import tarfile

try:
    import epochfs
except ImportError:  # not installed: the checkout's copy
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import epochfs


def list_shards(mount, root):
    base = os.path.join(mount, root)
    return sorted(f for f in os.listdir(base) if f.endswith(".tar"))


def shard_order(n, seed, epoch):
    return random.Random(seed * 1000003 + epoch).sample(range(n), n)


def samples_of(path):
    """Yields (key, {extension: bytes}) from one shard, streamed."""
    key, sample = None, {}
    with tarfile.open(path, mode="r|") as tar:
        for member in tar:
            if not member.isfile():
                continue
            k, _, ext = member.name.partition(".")
            if key is not None and k != key:
                yield key, sample
                sample = {}
            key = k
            sample[ext] = tar.extractfile(member).read()
    if key is not None:
        yield key, sample


def epochs_of_shards(mount, root, job_name, epochs, seed=0, shards_per_batch=1):
    """Yields (epoch, shard name, key, sample) for every sample of every
    epoch, the shard orders declared; the job ends with the loop."""
    shards = list_shards(mount, root)
    job = epochfs.Job(mount, job_name)
    job.create(exist_ok=True)
    try:
        job.configure(shards_per_batch, epochs, root=root)
        job.set_samples(shards)
        for k in range(epochs):
            order = shard_order(len(shards), seed, k)
            following = shard_order(len(shards), seed, k + 1) if k + 1 < epochs else None
            job.begin_epoch(k, order, following)
            for i in order:
                for key, sample in samples_of(os.path.join(mount, root, shards[i])):
                    yield k, shards[i], key, sample
    finally:
        job.remove()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mount")
    ap.add_argument("root", help="the shards' directory, relative to the mount")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--job", default="shards")
    args = ap.parse_args()
    counts = {}
    for epoch, _shard, _key, _sample in epochs_of_shards(args.mount, args.root, args.job,
                                                        args.epochs):
        counts[epoch] = counts.get(epoch, 0) + 1
    for epoch in sorted(counts):
        print("epoch %d: %d samples" % (epoch, counts[epoch]))


if __name__ == "__main__":
    main()
