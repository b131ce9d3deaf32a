# Shared by scripts/run and scripts/test: install what is missing, build.
# Sourced, not executed.

EPOCHFS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build, the tests and the demo need.
EPOCHFS_PACKAGES=(
  g++ meson ninja-build pkg-config
  libfuse3-dev fuse3 liburing-dev libxxhash-dev libtomlplusplus-dev
  nlohmann-json3-dev libspdlog-dev libcli11-dev libgtest-dev
  python3 groff-base procps
)
# What only the tests and benchmarks need (-Dtests=true, which also builds
# tests/bench): a real PyTorch DataLoader (Debian's torch); LZ4 and zstd as
# baselines of codec_bench; fio for the spill benchmark; matplotlib for the
# plots of scripts/bench-jobs.
EPOCHFS_TEST_PACKAGES=(
  python3-torch
  liblz4-dev libzstd-dev
  fio
  python3-matplotlib
)

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
epochfs_build() {
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$EPOCHFS_ROOT" "$@" >/dev/null || return 1
  fi
  ninja -C "$dir" >/dev/null || { ninja -C "$dir" 2>&1 | tail -40; return 1; }
}
