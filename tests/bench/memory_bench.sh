#!/usr/bin/env bash
# memory_bench.sh — how many times a cached byte is in memory.
#
#   tests/bench/memory_bench.sh [BUILD_DIR]     (default ./build; run as root)
#
# N files of SIZE_MIB MiB (default 400 x 1 MiB) in a tmpfs dir, read twice
# through an epochfs mount with a budget that holds them all (BUDGET, default
# 2GiB): the default mount (one copy, fuse.one_copy), the same with
# fuse.one_copy=false, and with fuse.no_open=true. After
# the reads it prints, for each: the data, the daemon's RSS growth (VmRSS
# after the reads minus after the mount came up), the mount's page cache
# (fincore(1) over the files through the mount) and their sum over the data:
# 2.0 is two copies (the daemon's RAM tier and the kernel's pages), 1.0 one.
# The LOWER tmpfs holds its own copy of the files, outside both.
#
# Environment: N, SIZE_MIB, BUDGET, EPOCHFS_BIN, NO_OPEN (0: skip that mount).
set -euo pipefail

BUILD=${1:-./build}
EPOCHFS=${EPOCHFS_BIN:-$BUILD/src/epochfs}
N=${N:-400}
SIZE_MIB=${SIZE_MIB:-1}
BUDGET=${BUDGET:-2GiB}

die() { echo "memory_bench: $*" >&2; exit 1; }
[[ -x $EPOCHFS ]] || die "no epochfs binary at $EPOCHFS (build it, or set EPOCHFS_BIN)"
[[ $(id -u) -eq 0 ]] || die "run as root (fuse.no_open needs it)"
command -v fincore > /dev/null || die "fincore(1) missing (Debian: util-linux-extra)"

WORK=$(mktemp -d /dev/shm/epochfs-mem.XXXXXX)
LOWER=$WORK/lower
MNT=$WORK/mnt
PID=
mkdir -p "$LOWER" "$MNT"
cleanup() {
  local rc=$?
  if grep -qs " $MNT fuse" /proc/mounts; then umount -R "$MNT" 2>/dev/null || umount -Rl "$MNT" || true; fi
  [[ -n $PID ]] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
head -c $((N * SIZE_MIB * 1024 * 1024)) /dev/urandom |
  (cd "$LOWER" && split -b $((SIZE_MIB * 1024 * 1024)) -a 5 -d - f_)
data=$((N * SIZE_MIB * 1024 * 1024))
rss() { awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

measure() {  # measure LABEL OPTS
  "$EPOCHFS" -f -o "$2" "$LOWER" "$MNT" > "$WORK/log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do [[ -r $MNT/.epochfs/version ]] && break; sleep 0.1; done
  [[ -r $MNT/.epochfs/version ]] || { cat "$WORK/log" >&2; die "mount not ready"; }
  local rss0 rss1 pages
  rss0=$(rss "$PID")
  for _ in 1 2; do cat "$MNT"/f_* > /dev/null; done
  sleep 1  # the kernel's pages of the last reads settle
  rss1=$(rss "$PID")
  pages=$(fincore --bytes --noheadings --output RES "$MNT"/f_* | awk '{ s += $1 } END { print s + 0 }')
  local grown=$((rss1 - rss0))
  printf '%-22s data %8s MiB  daemon RSS +%8s MiB  page cache %8s MiB  copies %s\n' "$1" \
    "$(mib $data)" "$(mib $grown)" "$(mib "$pages")" \
    "$(awk -v a=$grown -v b="$pages" -v d=$data 'BEGIN { printf "%.2f", (a + b) / d }')"
  umount -R "$MNT"
  wait "$PID" || true
  PID=
}

echo "$N files of $SIZE_MIB MiB, read twice, budget $BUDGET ($EPOCHFS)"
measure "default mount" "cache.memory=$BUDGET"
measure "fuse.one_copy=false" "cache.memory=$BUDGET,fuse.one_copy=false"
[[ ${NO_OPEN:-1} != 0 ]] && measure "fuse.no_open" "cache.memory=$BUDGET,fuse.no_open=true"
exit 0
