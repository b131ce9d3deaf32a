# Shared by scripts/run and scripts/test: install what is missing, build.
# Sourced, not executed.

EPOCHFS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build, the tests and the demo need.
EPOCHFS_PACKAGES=(
  g++ meson ninja-build pkg-config
  libfuse3-dev fuse3 liburing-dev libxxhash-dev libtomlplusplus-dev
  nlohmann-json3-dev libspdlog-dev libcli11-dev libgtest-dev
  libmicrohttpd-dev libsystemd-dev
  python3 groff-base procps
)
# What only the tests and benchmarks need (-Dtests=true, which also builds
# tests/bench): a real PyTorch DataLoader (Debian's torch); LZ4 and zstd as
# baselines of codec_bench; fio for the spill benchmark; matplotlib for the
# plots of scripts/bench/bench-jobs; prometheus_client parses .epochfs/metrics in
# test_metrics; tmux is the terminal `epochfs top` is tested in; venv, pip,
# setuptools and wheel install python/ into the tests' venv, offline;
# util-linux-extra has fincore(1), which test_no_open reads the kernel's page
# cache with; python3-kubernetes (and python3-yaml) load conf/kubernetes/ in
# test_deploy.
EPOCHFS_TEST_PACKAGES=(
  python3-torch
  liblz4-dev libzstd-dev
  fio
  python3-matplotlib
  python3-prometheus-client
  tmux
  util-linux-extra
  strace
  python3-venv python3-pip python3-setuptools python3-wheel
  python3-yaml python3-kubernetes
  ccache
)

# The libFuzzer build (scripts/dev/fuzz, and the 'fuzz' suite of scripts/test).
EPOCHFS_FUZZ_PACKAGES=(clang-14 libfuzzer-14-dev libclang-rt-14-dev)

epochfs_install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "epochfs: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    return 1
  fi
  echo "epochfs: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# epochfs_build DIR [meson options...]: configure once, then build.
# With EPOCHFS_SUITE=NAME set, only the targets that suite's tests run or
# depend on are built (the TSan tree runs one suite: no need to build the rest).
epochfs_build() {
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$EPOCHFS_ROOT" "$@" >/dev/null || return 1
  fi
  local targets=()
  if [ -n "${EPOCHFS_SUITE:-}" ]; then
    mapfile -t targets < <(epochfs_suite_targets "$dir" "$EPOCHFS_SUITE") || return 1
    ((${#targets[@]})) || { echo "epochfs: no targets for suite $EPOCHFS_SUITE" >&2; return 1; }
  fi
  ninja -C "$dir" "${targets[@]}" >/dev/null ||
    { ninja -C "$dir" "${targets[@]}" 2>&1 | tail -40; return 1; }
}

# epochfs_suite_targets DIR SUITE: the ninja targets (paths relative to DIR)
# of the executables that SUITE's tests depend on, one per line.
epochfs_suite_targets() {
  local dir=$1 suite=$2
  python3 - "$dir" "$suite" <<'PY'
import json, os, subprocess, sys
d, suite = sys.argv[1], sys.argv[2]
def intro(what):
    return json.loads(subprocess.run(["meson", "introspect", what, d], check=True,
                                     capture_output=True, text=True).stdout)
tests = [t for t in intro("--tests") if any(s.split(":")[-1] == suite for s in t["suite"])]
want = {dep for t in tests for dep in t["depends"]}
root = os.path.realpath(d)
for t in intro("--targets"):
    if t["id"] in want:
        for f in t["filename"]:
            print(os.path.relpath(f, root))
PY
}

# epochfs_build_fuzz [SECONDS]: the fuzz targets in build-fuzz, with clang-14,
# ASan+UBSan, every library instrumented for coverage; SECONDS is how long
# each target runs as a meson test (suite fuzz).
epochfs_build_fuzz() {
  local seconds=${1:-10}
  if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang-14 CXX=clang++-14 meson setup build-fuzz "$EPOCHFS_ROOT" -Dtests=false -Dfuzz=true \
      -Dfuzz_seconds="$seconds" -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false \
      -Doptimization=1 -Ddebug=false -Dcpp_args="-fsanitize=fuzzer-no-link -g1" >/dev/null || return 1
  else
    meson configure build-fuzz -Dfuzz_seconds="$seconds" >/dev/null || return 1
  fi
  EPOCHFS_SUITE=fuzz epochfs_build build-fuzz
}
