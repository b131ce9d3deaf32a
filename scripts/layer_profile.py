#!/usr/bin/env python3
"""Write the model file of `epochfs plan` (epochfs-plan(1)) from a PyTorch model.

Registers a forward hook on every leaf module (a module without children),
runs one forward pass of a batch of B samples on the CPU, and writes one
[[layer]] per leaf call, in execution order:

  name              the module's qualified name ("features.0"); a module
                    called again in the same pass gets "#2", "#3", ...
  activation_bytes  bytes of the module's output tensors (all tensors of a
                    tuple, list or dict output) divided by B, rounded up
  parameter_bytes   bytes of the module's own parameters (not buffers such as
                    batch-norm running statistics), on its first call only, so
                    that the layers' sum is the model's parameter bytes

Caveats, stated in the file it writes and in docs/plan.md: an output that is
a view of its input (Flatten, an in-place ReLU) is counted as if it were a new
tensor (an upper bound); parameters owned by a module with children, or by a
leaf that never runs, belong to no layer and are reported on stderr.

Usage:
  layer_profile.py --example -o model.toml            # the small CNN below
  layer_profile.py --model mypkg.nets:ResNet --model-args '{"depth": 18}' \\
      --input-shape 3,224,224 --batch 8 --device-memory 16GiB --gpus 8 \\
      --base-batch 256 --base-lr 0.1 -o resnet.toml
  layer_profile.py --model ./net.py:Net --input-shape 784 -o net.toml

From Python: profile(model, example_batch) -> [(name, activation_bytes,
parameter_bytes)], and to_toml(layers, ...) -> str.
"""

import argparse
import importlib
import importlib.util
import json
import math
import os
import sys

__all__ = ["profile", "to_toml", "ExampleCNN"]


def _tensors(value):
    """Every tensor in a module's output (nested tuples, lists, dicts)."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def profile(model, example_batch, warn=None):
    """Runs model(example_batch) once with hooks on the leaf modules.

    Returns [(name, activation_bytes_per_sample, parameter_bytes)] in call
    order. example_batch is a tensor whose first dimension is the batch size
    B (or a tuple of positional arguments whose first tensor sets B).
    warn(message) receives the caveats (default: print to stderr).
    """
    import torch

    if warn is None:
        def warn(message):
            print(f"layer_profile: {message}", file=sys.stderr)

    args = example_batch if isinstance(example_batch, tuple) else (example_batch,)
    first = next(_tensors(args), None)
    if first is None or first.dim() == 0:
        raise ValueError("the example batch needs a tensor with a batch dimension")
    batch = first.shape[0]

    layers = []
    calls = {}
    handles = []
    leaves = [(name, m) for name, m in model.named_modules() if not any(True for _ in m.children())]
    for name, module in leaves:
        label = name or type(module).__name__

        def hook(module, inputs, output, label=label):
            n = calls.get(label, 0) + 1
            calls[label] = n
            total = sum(t.numel() * t.element_size() for t in _tensors(output))
            if total == 0:
                warn(f"{label}: no output tensor; left out")
                return
            per_sample = math.ceil(total / batch)
            if total % batch:
                warn(f"{label}: output bytes {total} are not a multiple of the batch {batch}; "
                     f"rounded up to {per_sample} per sample")
            params = 0
            if n == 1:
                params = sum(p.numel() * p.element_size() for p in module.parameters(recurse=False))
            layers.append((label if n == 1 else f"{label}#{n}", per_sample, params))

        handles.append(module.register_forward_hook(hook))

    was_training = model.training
    model.eval()  # batch norm must not update its running statistics
    try:
        with torch.no_grad():
            model(*args)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)

    # Parameters that no layer accounts for.
    leaf_ids = {id(m) for _, m in leaves}
    called = set(calls)
    for name, module in model.named_modules():
        own = sum(p.numel() * p.element_size() for p in module.parameters(recurse=False))
        if own == 0:
            continue
        label = name or type(module).__name__
        if id(module) not in leaf_ids:
            warn(f"{label}: {own} parameter bytes owned by a module with children belong to "
                 f"no layer")
        elif label not in called:
            warn(f"{label}: never ran; its {own} parameter bytes belong to no layer")
    return layers


def _toml_string(s):
    return json.dumps(s)  # a TOML basic string for these names


def to_toml(layers, name="", comment="", device_memory=None, reserve=None, gpus=None,
            base_batch=None, base_lr=None, parameter_copies=None, activation_copies=None):
    """The model file for `epochfs plan`; None leaves a key out (its default)."""
    out = []
    for line in comment.splitlines():
        out.append(f"# {line}".rstrip())
    out.append("[model]")
    out.append(f"name = {_toml_string(name)}")
    if parameter_copies is not None:
        out.append(f"parameter_copies = {int(parameter_copies)}")
    if activation_copies is not None:
        out.append(f"activation_copies = {int(activation_copies)}")
    device = [("memory", device_memory), ("reserve", reserve), ("gpus", gpus)]
    if any(v is not None for _, v in device):
        out.append("")
        out.append("[device]")
        for key, v in device:
            if v is not None:
                out.append(f"{key} = {_toml_string(v) if isinstance(v, str) else int(v)}")
    if base_batch is not None or base_lr is not None:
        out.append("")
        out.append("[training]")
        if base_batch is not None:
            out.append(f"base_batch = {int(base_batch)}")
        if base_lr is not None:
            out.append(f"base_lr = {float(base_lr)!r}")
    for layer_name, act, params in layers:
        out.append("")
        out.append("[[layer]]")
        out.append(f"name = {_toml_string(layer_name)}")
        out.append(f"activation_bytes = {int(act)}")
        out.append(f"parameter_bytes = {int(params)}")
    return "\n".join(out) + "\n"


def _example_cnn():
    import torch.nn as nn

    class ExampleCNN(nn.Module):
        """A small CNN for 3x32x32 images (CIFAR-sized), 10 classes."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.relu1 = nn.ReLU()
            self.pool1 = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
            self.relu2 = nn.ReLU()
            self.pool2 = nn.MaxPool2d(2)
            self.flatten = nn.Flatten()
            self.fc = nn.Linear(16 * 8 * 8, 10)

        def forward(self, x):
            x = self.pool1(self.relu1(self.conv1(x)))
            x = self.pool2(self.relu2(self.conv2(x)))
            return self.fc(self.flatten(x))

    return ExampleCNN


def __getattr__(name):  # ExampleCNN without importing torch at import time
    if name == "ExampleCNN":
        return _example_cnn()
    raise AttributeError(name)


def _load_class(spec):
    """"pkg.module:Class" or "path/to/file.py:Class"."""
    module_part, sep, class_name = spec.rpartition(":")
    if not sep or not module_part or not class_name:
        raise ValueError(f"--model {spec!r}: expected MODULE:CLASS or FILE.py:CLASS")
    if module_part.endswith(".py"):
        path = os.path.abspath(module_part)
        mod_spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        if mod_spec is None:
            raise ValueError(f"--model: cannot load {module_part}")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[mod_spec.name] = module
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_part)
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise ValueError(f"--model: {module_part} has no {class_name}") from None


def _shape(text):
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected C,H,W-style integers, got {text!r}") from None
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(f"expected positive dimensions, got {text!r}")
    return dims


def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return v


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Write the model file of `epochfs plan` from a PyTorch model "
                    "(forward hooks on the leaf modules, one forward pass on the CPU).")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--example", action="store_true",
                       help="the built-in small CNN (input 3,32,32)")
    which.add_argument("--model", metavar="MODULE:CLASS",
                       help="pkg.module:Class or path/to/file.py:Class")
    ap.add_argument("--model-args", default="{}", metavar="JSON",
                    help="keyword arguments of the class, as a JSON object")
    ap.add_argument("--input-shape", type=_shape, metavar="C,H,W",
                    help="shape of one sample (default for --example: 3,32,32)")
    ap.add_argument("--dtype", default="float32",
                    help="torch dtype of the model and the input (default float32)")
    ap.add_argument("--batch", type=_positive_int, default=4,
                    help="samples in the forward pass (default 4)")
    ap.add_argument("--name", help="[model] name (default: the class name)")
    ap.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    for flag in ("--device-memory", "--reserve"):
        ap.add_argument(flag, metavar="SIZE", help=f"written to [device] ({flag[2:]})")
    ap.add_argument("--gpus", type=_positive_int, help="written to [device]")
    ap.add_argument("--base-batch", type=_positive_int, help="written to [training]")
    ap.add_argument("--base-lr", type=float, help="written to [training]")
    ap.add_argument("--parameter-copies", type=_positive_int, help="written to [model]")
    ap.add_argument("--activation-copies", type=_positive_int, help="written to [model]")
    a = ap.parse_args(argv)

    try:
        import torch
    except ImportError:
        print("layer_profile: PyTorch is not installed (Debian: apt-get install python3-torch)",
              file=sys.stderr)
        return 2
    dtype = getattr(torch, a.dtype, None)
    if not isinstance(dtype, torch.dtype):
        ap.error(f"--dtype: not a torch dtype: {a.dtype!r}")
    try:
        kwargs = json.loads(a.model_args)
    except json.JSONDecodeError as e:
        ap.error(f"--model-args: not JSON: {e}")
    if not isinstance(kwargs, dict):
        ap.error("--model-args: expected a JSON object")

    if a.example:
        cls = _example_cnn()
        shape = a.input_shape or (3, 32, 32)
    else:
        if a.input_shape is None:
            ap.error("--input-shape is required with --model")
        try:
            cls = _load_class(a.model)
        except (ValueError, ImportError) as e:
            ap.error(str(e))
        shape = a.input_shape
    model = cls(**kwargs)
    if dtype.is_floating_point:
        model = model.to(dtype)
        batch = torch.randn((a.batch,) + shape, dtype=dtype)
    else:
        batch = torch.zeros((a.batch,) + shape, dtype=dtype)  # token ids: 0 is always valid

    layers = profile(model, batch)
    if not layers:
        print("layer_profile: no leaf module produced an output", file=sys.stderr)
        return 1
    comment = (f"Written by scripts/layer_profile.py (torch {torch.__version__}): one forward pass of "
               f"{a.batch} samples of shape {','.join(map(str, shape))}, {a.dtype}.\n"
               "activation_bytes: a leaf module's output bytes per sample; parameter_bytes: its "
               "own parameters.\nRun: epochfs plan THIS_FILE [--device-memory SIZE] [--gpus N] "
               "(epochfs-plan(1)).")
    text = to_toml(layers, name=a.name or cls.__name__, comment=comment,
                   device_memory=a.device_memory, reserve=a.reserve, gpus=a.gpus,
                   base_batch=a.base_batch, base_lr=a.base_lr,
                   parameter_copies=a.parameter_copies, activation_copies=a.activation_copies)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
