#!/usr/bin/env python3
"""tf.data over an epochfs mount, each epoch's order declared through epochfs.Job.

tf.data shuffles inside its own pipeline, where epochfs cannot see the
order; so this recipe shuffles itself (a permutation per epoch, seeded, so
that epoch K+1's is known during K), declares it, and hands tf.data the
files in that order (no .shuffle() in the pipeline):

    epochfs /nfs/datasets /mnt/epochfs
    python3 tfdata_epochfs.py /mnt/epochfs imagenet-mini/train --epochs 3

The epochfs part is `declared_epochs`; `epoch_dataset` is the only line of
TensorFlow. Requires TensorFlow and the epochfs package. docs/containers.md
(Recipes beyond PyTorch).
"""

import argparse
import os
import random
import sys

try:
    import epochfs
except ImportError:  # not installed: the checkout's copy
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import epochfs


def list_files(mount, root):
    """The dataset's files, relative to MOUNT/ROOT, in a stable order."""
    base = os.path.join(mount, root)
    out = []
    for d, dirs, files in os.walk(base):
        dirs.sort()
        out += [os.path.relpath(os.path.join(d, f), base) for f in sorted(files)]
    return out


def permutation(n, seed, epoch):
    return random.Random(seed * 1000003 + epoch).sample(range(n), n)


def declared_epochs(mount, root, job_name, batch_size, epochs, seed=0):
    """Registers the job, then yields (epoch, paths in that epoch's order),
    each epoch's order and the next one's declared before its first read.
    The job ends (its cache released) when the loop ends."""
    files = list_files(mount, root)
    job = epochfs.Job(mount, job_name)
    job.create(exist_ok=True)  # this process is the job's first pid
    try:
        job.configure(batch_size, epochs, root=root)
        job.set_samples(files)
        for k in range(epochs):
            order = permutation(len(files), seed, k)
            following = permutation(len(files), seed, k + 1) if k + 1 < epochs else None
            job.begin_epoch(k, order, following)
            yield k, [os.path.join(mount, root, files[i]) for i in order]
    finally:
        job.remove()


def epoch_dataset(tf, paths, batch_size):
    """The pipeline: the files in the declared order, read, batched."""
    return tf.data.Dataset.from_tensor_slices(paths).map(tf.io.read_file).batch(batch_size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mount")
    ap.add_argument("root", help="the dataset's directory, relative to the mount")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--job", default="tfdata")
    args = ap.parse_args()
    import tensorflow as tf

    for epoch, paths in declared_epochs(args.mount, args.root, args.job, args.batch_size,
                                        args.epochs):
        n = sum(int(tf.size(b)) for b in epoch_dataset(tf, paths, args.batch_size))
        print("epoch %d: %d samples" % (epoch, n))


if __name__ == "__main__":
    main()
