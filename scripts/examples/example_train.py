#!/usr/bin/env python3
"""A plain PyTorch training script over a folder of raw files, adopted to epochfs.

The lines marked `# epochfs` are the whole change (4 lines): import the
wrapper, wrap the sampler, pass it (and its worker_init_fn) to the DataLoader,
close it at the end. Everything else is an ordinary training loop.

    epochfs /nfs/datasets /mnt/epochfs
    python3 example_train.py /mnt/epochfs/imagenet-mini/train --epochs 3

Requires torch and the epochfs package (`pip install ./python` in a venv;
from a checkout, the repository's python/ is used when it is not installed).
"""

import argparse
import os
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, RandomSampler

try:
    from epochfs import EpochfsSampler  # epochfs
except ImportError:  # not installed: the checkout's copy
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    from epochfs import EpochfsSampler


class RawFolder(Dataset):
    """ImageFolder-like: ROOT/CLASS/FILE, each sample the file's raw bytes."""

    def __init__(self, root, size=4096):
        self.classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.samples = [(os.path.join(root, c, f), i)
                        for i, c in enumerate(self.classes)
                        for f in sorted(os.listdir(os.path.join(root, c)))]
        self.size = size

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, k):
        path, label = self.samples[k]
        with open(path, "rb") as f:
            data = f.read()
        x = torch.frombuffer(bytearray(data[:self.size].ljust(self.size, b"\0")), dtype=torch.uint8)
        return x.float() / 255.0, label


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root", help="dataset folder inside the epochfs mount")
    ap.add_argument("--mount", default="/mnt/epochfs")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()

    ds = RawFolder(args.root)
    model = nn.Sequential(nn.Linear(ds.size, 64), nn.ReLU(), nn.Linear(64, len(ds.classes)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sampler = EpochfsSampler(RandomSampler(ds), args.mount, "example", ds.samples, args.batch_size, args.epochs, loaders=2)  # epochfs
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, num_workers=2, worker_init_fn=sampler.worker_init_fn)  # epochfs

    for epoch in range(args.epochs):
        total = 0.0
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
        print("epoch %d: loss %.4f" % (epoch, total / max(1, len(loader))))
    sampler.close()  # epochfs


if __name__ == "__main__":
    main()
