#!/usr/bin/env bash
# read_bench.sh — hot-cache read throughput of epochfs relative to tmpfs.
#
#   tests/bench/read_bench.sh [BUILD_DIR]     (default ./build; run as root)
#
# What it measures: the cost of the FUSE path for cache HITS.
#   1. N files of SIZE_KIB KiB (default 2000 × 110 KiB) in a tmpfs dir; epochfs
#      mounted over it (cache.policy=lru, budget large enough to hold all);
#      one warm-up pass loads every file into the cache. Then, for 1, 2 and 4
#      threads, `readfiles` (open + read-to-EOF + close) over all files,
#      REPEATS times, directly on tmpfs and through the mount. The table shows
#      files/s for each and the ratio epochfs/tmpfs (1.00 = as fast as tmpfs).
#   2. One BIG_MIB MiB file (default 512), read through the mount (hot) vs
#      tmpfs: MB/s and ratio.
#   3. Steps 1 and 2 again through a second epochfs mount with fuse.no_open=true
#      (hot reads that send no request: the kernel opens files by itself),
#      in the same run (NO_OPEN=0 skips it); its policy is "future". Step 1
#      once more on it as a registered job reading in its declared order
#      (readfiles -j: one job per thread count, loaders = threads, batches of
#      32 in order, each repeat one epoch, `position` reported every `loaders`
#      batches but at most once per 5 ms, as EpochfsSampler does): the policy
#      must still see the job's progress, so the script
#      prints each job's hits and misses per epoch from its `status`.
#      After that mount's warm-up, page_runs prints how the kernel laid out
#      the small files' pages in physical memory, tmpfs's and the mount's:
#      the share of pages whose frame follows the previous page's (a hot
#      read of scattered pages is slower; see docs/benchmarks.md).
#   4. The FUSE floor for step 1: libfuse's own example passthrough_ll
#      (built from libfuse3-dev's examples when gcc has them; PLL=0 skips),
#      mounted over the same files with cache=always (the kernel keeps pages
#      across opens, as epochfs' kernel_cache), read hot the same way: a FUSE
#      filesystem that does nothing but pass opens through.
# Both sides read hot data: tmpfs from RAM, epochfs from its RAM tier (or the
# kernel page cache, if the daemon uses it). The machine is noisy: compare the
# ratios of one run, not absolute numbers across runs.
#
# Environment: N, SIZE_KIB, REPEATS, BIG_MIB, THREADS ("1 2 4"), PLL (0: no floor),
#              NO_OPEN (0: no fuse.no_open mount),
#              EPOCHFS_BIN, READFILES_BIN, PAGE_RUNS_BIN, EPOCHFS_OPTS (extra -o options).
# Cleans up (unmount, kill, remove the tmpfs dir) on any exit.
set -euo pipefail

BUILD=${1:-./build}
EPOCHFS=${EPOCHFS_BIN:-$BUILD/src/epochfs}
READFILES=${READFILES_BIN:-$BUILD/tests/bench/readfiles}
PAGE_RUNS=${PAGE_RUNS_BIN:-$BUILD/tests/bench/page_runs}
N=${N:-2000}
SIZE_KIB=${SIZE_KIB:-110}
REPEATS=${REPEATS:-5}
BIG_MIB=${BIG_MIB:-512}
THREADS=${THREADS:-"1 2 4"}

die() { echo "read_bench: $*" >&2; exit 1; }
[[ -x $EPOCHFS ]] || die "no epochfs binary at $EPOCHFS (build it, or set EPOCHFS_BIN)"
[[ -x $READFILES ]] || die "no readfiles binary at $READFILES (ninja -C $BUILD tests/bench/readfiles)"
[[ -e /dev/fuse ]] || die "/dev/fuse missing"
[[ $(id -u) -eq 0 ]] || die "run as root"

WORK=$(mktemp -d /dev/shm/epochfs-bench.XXXXXX)
LOWER=$WORK/lower
MNT=$WORK/mnt
NO_MNT=$WORK/no-open-mnt
PLL_MNT=$WORK/pll-mnt
LOG=$WORK/epochfs.log
DAEMON_PID=
NO_PID=
NO_OPEN=${NO_OPEN:-1}
mkdir -p "$LOWER/small" "$LOWER/big" "$MNT" "$NO_MNT" "$PLL_MNT"

cleanup() {
  local rc=$?
  if grep -qs " $PLL_MNT fuse" /proc/mounts; then
    fusermount3 -u "$PLL_MNT" 2>/dev/null || fusermount3 -uz "$PLL_MNT" 2>/dev/null || true
  fi
  if grep -qs " $MNT fuse" /proc/mounts; then
    fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null || true
  fi
  # fuse.no_open: two mounts, the control session on MNT/.epochfs (umount -R).
  if grep -qs " $NO_MNT fuse" /proc/mounts; then umount -R "$NO_MNT" 2>/dev/null || umount -Rl "$NO_MNT" || true; fi
  for pid in $DAEMON_PID $NO_PID; do
    kill -0 "$pid" 2>/dev/null || continue
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- dataset ---------------------------------------------------------------
echo "generating $N files of $SIZE_KIB KiB and one $BIG_MIB MiB file in $WORK ..."
head -c $((N * SIZE_KIB * 1024)) /dev/urandom |
  (cd "$LOWER/small" && split -b $((SIZE_KIB * 1024)) -a 5 -d - img_)
head -c $((BIG_MIB * 1024 * 1024)) /dev/urandom > "$LOWER/big/blob.bin"
(cd "$LOWER/small" && ls) > "$WORK/names"
[[ $(wc -l < "$WORK/names") -eq $N ]] || die "dataset generation failed"
sed "s|^|$LOWER/small/|" "$WORK/names" > "$WORK/list.tmpfs"
sed "s|^|$MNT/small/|" "$WORK/names" > "$WORK/list.mnt"
sed "s|^|$NO_MNT/small/|" "$WORK/names" > "$WORK/list.no"
echo "$LOWER/big/blob.bin" > "$WORK/big.tmpfs"
echo "$MNT/big/blob.bin" > "$WORK/big.mnt"
echo "$NO_MNT/big/blob.bin" > "$WORK/big.no"

# --- mount -------------------------------------------------------------------
# Budget: all small files + the big one; ×4 for the big file because the
# daemon may refuse objects larger than a fraction of the budget (see
# max_object_bytes in .epochfs/stats). Only a limit: used stays ~ the data.
budget_mib=$(( (N * SIZE_KIB / 1024) + 4 * BIG_MIB + 256 ))
opts="cache.memory=${budget_mib}MiB,cache.policy=lru${EPOCHFS_OPTS:+,$EPOCHFS_OPTS}"
start_epochfs() {  # start_epochfs MNT LOG OPTS: STARTED_PID, once the mount answers
  "$EPOCHFS" -f -o "$3" "$LOWER" "$1" > "$2" 2>&1 &
  local pid=$!
  STARTED_PID=$pid
  for _ in $(seq 100); do
    [[ -r $1/.epochfs/version ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$2" >&2; die "epochfs exited"; }
    sleep 0.1
  done
  [[ -r $1/.epochfs/version ]] || { cat "$2" >&2; die "mount not ready after 10 s"; }
}
start_epochfs "$MNT" "$LOG" "$opts"
DAEMON_PID=$STARTED_PID
echo "epochfs mounted: $EPOCHFS -o $opts (pid $DAEMON_PID)"
if [[ $NO_OPEN != 0 ]]; then
  start_epochfs "$NO_MNT" "$WORK/no-open.log" \
    "${opts/cache.policy=lru/cache.policy=future,cache.prefetch=0},fuse.no_open=true"
  NO_PID=$STARTED_PID
  echo "epochfs mounted: $EPOCHFS -o ${opts/cache.policy=lru/cache.policy=future,cache.prefetch=0},fuse.no_open=true (pid $NO_PID)"
fi

# readfiles -q output → one field; stats_field NAME → integer from .epochfs/stats
stats_field() { tr -d ' \n' < "$MNT/.epochfs/stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
field() { sed -n "s/.*\\b$1=\\([0-9.]*\\).*/\\1/p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
run() {  # run LIST THREADS REPEATS → "files_per_s mb_per_s"
  local out
  out=$("$READFILES" -q -t "$2" -r "$3" "$1") || die "readfiles failed on $1: $out"
  echo "$(field best_files_per_s <<<"$out") $(field best_mb_per_s <<<"$out")"
}

# --- warm-up ---------------------------------------------------------------
"$READFILES" -q -t 2 -r 1 "$WORK/list.mnt" > /dev/null || die "warm-up failed"
"$READFILES" -q -t 2 -r 1 "$WORK/list.tmpfs" > /dev/null
if [[ $NO_OPEN != 0 ]]; then
  "$READFILES" -q -t 2 -r 1 "$WORK/list.no" > /dev/null || die "no_open warm-up failed"
fi
# How the kernel laid out the pages it caches, in physical memory (page_runs).
page_layout=
if [[ $NO_OPEN != 0 && -x $PAGE_RUNS ]]; then
  page_layout="the small files' pages in physical runs (frame = previous frame +1 / -1): \
tmpfs $("$PAGE_RUNS" "$WORK/list.tmpfs" | sed 's/.*ascending=\([0-9]*\) descending=\([0-9]*\)/\1% \/ \2%/'), \
fuse.no_open mount $("$PAGE_RUNS" "$WORK/list.no" | sed 's/.*ascending=\([0-9]*\) descending=\([0-9]*\)/\1% \/ \2%/')"
fi
# (top-level fields: the jobs' rows have hits and misses too)
no_stats() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
  "$NO_MNT/.epochfs/stats" "$1"; }
no_requests() { [[ $NO_OPEN != 0 ]] && echo $(( $(no_stats hits) + $(no_stats misses) )) || echo 0; }
no_hot_requests=0
no_before=$(no_requests)

echo
echo "small files: $N x $SIZE_KIB KiB, hot, best of $REPEATS repeats"
BATCH=32
register_job() {  # register_job NAME LOADERS: a job over the small files, sample k = line k
  local jd=$NO_MNT/.epochfs/jobs/$1
  mkdir "$jd"
  printf 'batch_size = %d\nepochs = %d\nroot = "small"\nloaders = %d\n' \
    "$BATCH" $((REPEATS + 1)) "$2" > "$jd/config"
  cat "$WORK/names" > "$jd/samples"
}
run_job() {  # run_job THREADS → files_per_s, as the registered job job-tTHREADS
  local out
  out=$("$READFILES" -q -t "$1" -r "$REPEATS" -j "$NO_MNT/.epochfs/jobs/job-t$1" -e 0 \
        -b "$BATCH" "$WORK/list.no") || die "readfiles as a job failed: $out"
  field best_files_per_s <<<"$out"
}
printf '%-8s %14s %14s %10s %16s %10s %16s %10s\n' threads tmpfs_files/s epochfs_files/s ratio \
  no_open_files/s ratio no_open+job ratio
for t in $THREADS; do
  read -r tf _ < <(run "$WORK/list.tmpfs" "$t" "$REPEATS")
  read -r ef _ < <(run "$WORK/list.mnt" "$t" "$REPEATS")
  nf=0 jf=0
  if [[ $NO_OPEN != 0 ]]; then
    read -r nf _ < <(run "$WORK/list.no" "$t" "$REPEATS")
    register_job "job-t$t" "$t"
    jf=$(run_job "$t")
  fi
  printf '%-8s %14.0f %14.0f %10s %16.0f %10s %16.0f %10s\n' "$t" "$tf" "$ef" \
    "$(ratio "$ef" "$tf")" "$nf" "$(ratio "$nf" "$tf")" "$jf" "$(ratio "$jf" "$tf")"
done
no_hot_requests=$(( $(no_requests) - no_before ))
[[ -n $page_layout ]] && echo "$page_layout"
if [[ $NO_OPEN != 0 ]]; then
  echo "the registered jobs' status (fuse.no_open; each repeat one epoch of $N files; the"
  echo "last epoch's final $BATCH x 2 x loaders reads count at the next epoch marker):"
  for t in $THREADS; do
    python3 - "$NO_MNT/.epochfs/jobs/job-t$t/status" "job-t$t" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("  %s: epoch %s, hits/misses per epoch: %s" % (sys.argv[2], s["epoch"], " ".join(
    "%d/%d" % (e["hits"], e["misses"]) for e in s["epochs"])))
PY
  done
fi

# --- large file -------------------------------------------------------------
"$READFILES" -q -r 1 "$WORK/big.mnt" > /dev/null || die "large-file warm-up failed"
read -r _ tm < <(run "$WORK/big.tmpfs" 1 3)
lower_before=$(stats_field bytes_read_lower)
read -r _ em < <(run "$WORK/big.mnt" 1 3)
lower_after=$(stats_field bytes_read_lower)
nm=0
if [[ $NO_OPEN != 0 ]]; then
  "$READFILES" -q -r 1 "$WORK/big.no" > /dev/null || die "no_open large-file warm-up failed"
  no_before=$(no_requests)
  read -r _ nm < <(run "$WORK/big.no" 1 3)
  no_hot_requests=$(( no_hot_requests + $(no_requests) - no_before ))
fi
echo
echo "large file: one $BIG_MIB MiB file, hot, 1 thread, best of 3"
printf '%-8s %14s %14s %10s %16s %10s\n' "" tmpfs_MB/s epochfs_MB/s ratio no_open_MB/s ratio
printf '%-8s %14.1f %14.1f %10s %16.1f %10s\n' "" "$tm" "$em" "$(ratio "$em" "$tm")" \
  "$nm" "$(ratio "$nm" "$tm")"
echo "bytes read from LOWER during the hot large-file runs: $((lower_after - lower_before))" \
  "($([[ $lower_after -eq $lower_before ]] && echo 'served from the cache' || echo 'NOT served from the cache'))"

# --- the FUSE floor: libfuse's passthrough_ll ----------------------------------
PLL_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
if [[ ${PLL:-1} != 0 && -r $PLL_SRC ]] && command -v gcc > /dev/null &&
   gcc -O2 "$PLL_SRC" -o "$WORK/passthrough_ll" $(pkg-config --cflags --libs fuse3) 2> /dev/null &&
   "$WORK/passthrough_ll" -o "source=$LOWER,cache=always" "$PLL_MNT"; then
  sed "s|^|$PLL_MNT/small/|" "$WORK/names" > "$WORK/list.pll"
  "$READFILES" -q -t 2 -r 1 "$WORK/list.pll" > /dev/null || die "passthrough_ll warm-up failed"
  echo
  echo "the FUSE floor: libfuse passthrough_ll (cache=always) over the same small files, hot"
  printf '%-8s %14s %14s %14s %12s\n' threads tmpfs_files/s pll_files/s epochfs_files/s epochfs/pll
  for t in $THREADS; do
    read -r tf _ < <(run "$WORK/list.tmpfs" "$t" "$REPEATS")
    read -r pf _ < <(run "$WORK/list.pll" "$t" "$REPEATS")
    read -r ef _ < <(run "$WORK/list.mnt" "$t" "$REPEATS")
    printf '%-8s %14.0f %14.0f %14.0f %12s\n' "$t" "$tf" "$pf" "$ef" "$(ratio "$ef" "$pf")"
  done
  fusermount3 -u "$PLL_MNT"
else
  echo
  echo "the FUSE floor: skipped (PLL=0, or no gcc or libfuse3-dev example to build passthrough_ll)"
fi

if [[ $NO_OPEN != 0 ]]; then
  echo "fuse.no_open: files that reached the daemon (hits + misses) during the hot runs:" \
    "$no_hot_requests"
  umount -R "$NO_MNT"
  wait "$NO_PID" && echo "epochfs (fuse.no_open) exited 0" || echo "epochfs (fuse.no_open) exited $?"
  NO_PID=
fi
echo
echo "epochfs stats: $(tr -d '\n' < "$MNT/.epochfs/stats")"
fusermount3 -u "$MNT"
for _ in $(seq 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
wait "$DAEMON_PID" && echo "epochfs exited 0" || echo "epochfs exited $?"
DAEMON_PID=
