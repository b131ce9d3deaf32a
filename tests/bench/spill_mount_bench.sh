#!/usr/bin/env bash
# Spill tier throughput: sequential write and read of one file through the
# mount's .spill/ against fio straight on the same SSD directory, both with
# io_uring, O_DIRECT, 1 MiB blocks and queue depth 16. One run; prints the
# ratios. Not a test. Needs root (drop_caches) and fio.
#
#   tests/bench/spill_mount_bench.sh [BUILD_DIR] [SIZE]     (default: build, 2g)
#   EPOCHFS_BIN=... to use another binary (e.g. a release build).
#   BENCH_DIR=...   where the SSD directory goes (default /var/tmp; not tmpfs)
set -euo pipefail
build=${1:-build}
size=${2:-2g}
bin=${EPOCHFS_BIN:-$build/src/epochfs}
[ -x "$bin" ] || { echo "no epochfs binary at $bin" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio is missing (apt-get install fio)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "run as root (drop_caches)" >&2; exit 1; }

work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/epochfs-spill-bench.XXXXXX")
mnt=$work/mnt lower=$work/lower ssd=$work/ssd
mkdir -p "$mnt" "$lower" "$ssd/fio"
pid=
cleanup() {
  fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# fio_bw DIR RW [extra fio args]: MiB/s of one job.
fio_bw() {
  local dir=$1 rw=$2; shift 2
  fio --name=spill --directory="$dir" --filename=data --ioengine=io_uring --direct=1 \
      --bs=1M --iodepth=16 --rw="$rw" --size="$size" --end_fsync=1 --invalidate=1 \
      --output-format=json "$@" |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]
k = "write" if j["write"]["io_bytes"] else "read"
print("%.1f" % (j[k]["bw_bytes"] / 2**20))'
}

mount_epochfs() {
  "$bin" -f -o "spill.path=$ssd/store,spill.staging=256MiB" "$lower" "$mnt" &
  pid=$!
  for _ in $(seq 100); do
    [ -r "$mnt/.epochfs/version" ] && return 0
    sleep 0.1
  done
  echo "mount failed" >&2
  exit 1
}

unmount_epochfs() {
  fusermount3 -u "$mnt"
  wait "$pid" || true
  pid=
}

ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

row() {  # row LABEL DATA_ARGS...
  local label=$1; shift
  drop
  local fw; fw=$(fio_bw "$ssd/fio" write "$@")
  drop
  local fr; fr=$(fio_bw "$ssd/fio" read "$@")
  rm -f "$ssd/fio/data"
  mount_epochfs
  local ew; ew=$(fio_bw "$mnt/.spill" write "$@")
  unmount_epochfs  # the read starts from the SSD, not from staging
  drop
  mount_epochfs
  local er; er=$(fio_bw "$mnt/.spill" read "$@")
  rm -f "$mnt/.spill/data"
  unmount_epochfs
  printf "%-22s %9s %9s %6s   %9s %9s %6s\n" "$label" "$ew" "$fw" \
    "$(ratio "$ew" "$fw")" "$er" "$fr" "$(ratio "$er" "$fr")"
}

echo "spill tier vs fio on the same directory: $size, 1 MiB blocks, io_uring, O_DIRECT, QD 16"
echo "binary: $bin   directory: $work   cores: $(nproc)"
printf "%-22s %9s %9s %6s   %9s %9s %6s\n" "data" "write" "fio" "ratio" "read" "fio" "ratio"
printf "%-22s %9s %9s %6s   %9s %9s %6s\n" "" "MiB/s" "MiB/s" "" "MiB/s" "MiB/s" ""
row "random (incompressible)" --refill_buffers
row "80% zeros" --refill_buffers --buffer_compress_percentage=80 --buffer_compress_chunk=4096

# The ceiling of any FUSE data path here: null_fuse stores nothing (writes
# dropped, reads from one buffer) and runs as many threads as the spill
# area's mount, so what it reaches is what the kernel's FUSE transport
# allows; the spill area cannot pass it.
nullbin=$(dirname "$bin")/../tests/bench/null_fuse
if [ -x "$nullbin" ]; then
  nmnt=$work/null
  mkdir -p "$nmnt"
  "$nullbin" "$nmnt" "${NULL_THREADS:-2}" &
  npid=$!
  for _ in $(seq 100); do mountpoint -q "$nmnt" && break; sleep 0.1; done
  nw=$(fio_bw "$nmnt" write --refill_buffers)
  nr=$(fio_bw "$nmnt" read --refill_buffers)
  fusermount3 -u "$nmnt"; wait "$npid" || true
  drop
  fw=$(fio_bw "$ssd/fio" write --refill_buffers); drop
  fr=$(fio_bw "$ssd/fio" read --refill_buffers); rm -f "$ssd/fio/data"
  printf "%-22s %9s %9s %6s   %9s %9s %6s\n" "null FUSE (no store)" "$nw" "$fw" \
    "$(ratio "$nw" "$fw")" "$nr" "$fr" "$(ratio "$nr" "$fr")"
fi
