#!/usr/bin/env python3
"""Generate a small ImageFolder-like demo dataset for epochfs.

    demo_dataset.py DIR [--classes 5] [--per-class 40] [--seed 1]

Writes DIR/class_K/img_NNNN.bin (K = 0..classes-1, NNNN numbered across the
whole dataset) with sizes spread between 1 KiB and 300 KiB and deterministic
pseudo-random contents: the same arguments always produce the same bytes.
Prints the number of files and the total bytes. Standard library only.
"""

import argparse
import os
import random
import sys

MIN_SIZE = 1024
MAX_SIZE = 300 * 1024


def file_size(rng):
    # Mostly "JPEG-like" 60..160 KiB, with a tail of small and large files.
    r = rng.random()
    if r < 0.15:
        return rng.randint(MIN_SIZE, 16 * 1024)
    if r < 0.85:
        return rng.randint(60 * 1024, 160 * 1024)
    return rng.randint(160 * 1024, MAX_SIZE)


def generate(root, classes, per_class, seed):
    rng = random.Random(seed)
    count = total = 0
    for k in range(classes):
        cdir = os.path.join(root, "class_%d" % k)
        os.makedirs(cdir, exist_ok=True)
        for _ in range(per_class):
            size = file_size(rng)
            data = random.Random((seed << 32) ^ (count * 2654435761)).randbytes(size)
            with open(os.path.join(cdir, "img_%04d.bin" % count), "wb") as f:
                f.write(data)
            count += 1
            total += size
    return count, total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="output directory (created if missing)")
    p.add_argument("--classes", type=int, default=5)
    p.add_argument("--per-class", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if a.classes < 1 or a.per_class < 1 or a.seed < 0:
        p.error("--classes and --per-class must be >= 1, --seed >= 0")
    count, total = generate(a.dir, a.classes, a.per_class, a.seed)
    print("%d files, %d bytes (%.1f MiB) in %s" % (count, total, total / 2**20, a.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
