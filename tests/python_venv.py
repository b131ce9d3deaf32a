"""The tests of the Python package run where a user's code runs: in a virtual
environment into which `pip install` put python/ (not on a PYTHONPATH into
the source tree).

reexec_in_venv(): called first by such a test file; unless it already runs
in that venv, it makes sure the venv exists and holds the package as the
source tree has it now, then re-executes the test file with the venv's
python. The venv is EPOCHFS_VENV (meson: BUILD/python-venv), made by
/usr/bin/python3 -m venv --system-site-packages (Debian's torch stays
visible) and filled by pip install --no-build-isolation --no-index (offline:
Debian's setuptools builds it). A hash of python/ decides a reinstall; a
lock file serialises tests that start at once.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(REPO, "python")


def _source_hash():
    h = hashlib.sha256()
    for d, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(x for x in dirs if not x.endswith((".egg-info", "__pycache__", "build")))
        for f in sorted(files):
            p = os.path.join(d, f)
            h.update(os.path.relpath(p, PACKAGE).encode() + b"\0")
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def ensure_venv(venv):
    python = os.path.join(venv, "bin", "python3")
    stamp = os.path.join(venv, "epochfs-source.sha256")
    os.makedirs(os.path.dirname(os.path.abspath(venv)), exist_ok=True)
    with open(os.path.abspath(venv) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        want = _source_hash()
        try:
            with open(stamp) as f:
                if f.read() == want and os.access(python, os.X_OK):
                    return python
        except OSError:
            pass
        if not os.access(python, os.X_OK):
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                           check=True)
        # Built in a copy: setuptools writes build/ and *.egg-info next to
        # its input, and the source tree stays clean.
        with tempfile.TemporaryDirectory(prefix="epochfs-pkg-") as tmp:
            src = os.path.join(tmp, "python")
            shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns(
                "build", "*.egg-info", "__pycache__"))
            subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                            "--no-index", "--no-deps", "--force-reinstall", src],
                           check=True, cwd=tmp)
        with open(stamp, "w") as f:
            f.write(want)
        return python


def reexec_in_venv():
    venv = os.environ.get("EPOCHFS_VENV")
    if not venv:
        sys.exit("EPOCHFS_VENV is not set (meson sets it: BUILD/python-venv)")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    python = ensure_venv(venv)
    os.execv(python, [python, os.path.abspath(sys.argv[0])] + sys.argv[1:])
