#!/usr/bin/env python3
"""JAX with Grain over an epochfs mount, each epoch's order declared through epochfs.Job.

Grain's own shuffle (MapDataset.shuffle, IndexSampler(shuffle=True)) draws
the order inside Grain, where epochfs cannot see it; so this recipe draws
it (the same declared_epochs as tfdata_epochfs.py: list the files, a seeded
permutation per epoch, declared with the next one before the first read)
and gives Grain the files in that order:

    python3 grain_epochfs.py /mnt/epochfs imagenet-mini/train --epochs 3

`epoch_dataset` is the only Grain code. Requires grain (and JAX for the
training step) and the epochfs package.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfdata_epochfs import declared_epochs  # noqa: E402  (the epochfs part, shared)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def epoch_dataset(grain, paths, batch_size):
    """The pipeline: a MapDataset over the declared order, read, batched."""
    return grain.MapDataset.source(paths).map(read_file).batch(batch_size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mount")
    ap.add_argument("root", help="the dataset's directory, relative to the mount")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--job", default="grain")
    args = ap.parse_args()
    import grain

    for epoch, paths in declared_epochs(args.mount, args.root, args.job, args.batch_size,
                                        args.epochs):
        n = sum(len(b) for b in epoch_dataset(grain, paths, args.batch_size))
        print("epoch %d: %d samples" % (epoch, n))


if __name__ == "__main__":
    main()
