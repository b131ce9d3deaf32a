#!/usr/bin/env bash
# Spill tier throughput: sequential write and cold read of one file through
# the mount's .spill/ against fio straight on the same SSD directory, both
# with io_uring, O_DIRECT, 1 MiB blocks and queue depth 16. Not a test. Needs
# root (drop_caches) and fio.
#
# The disk's own rate moves by 2x from one minute to the next, so one pair of
# runs says little. The bench runs ROUNDS rounds; in each, fio and the mount
# write back to back, then both read back cold (after a remount and
# drop_caches), the order alternating from round to round. Each round gives a
# ratio (mount / fio) for writes and for reads; the summary is the median of
# the rounds' ratios, with their minimum and maximum. The load average is
# printed with each round.
#
#   tests/bench/spill_mount_bench.sh [BUILD_DIR] [SIZE]     (default: build, 1g)
#   EPOCHFS_BIN=...   the binary (default BUILD_DIR/src/epochfs)
#   EPOCHFS_BIN_B=... a second binary measured in the same rounds (A/B)
#   ROUNDS=N          rounds (default 5)
#   DATA="random zeros"  the data of each round (default both)
#   NULL_FUSE=0       skip the null FUSE row (the transport's ceiling)
#   BENCH_DIR=...     where the SSD directory goes (default /var/tmp; not tmpfs)
set -euo pipefail
build=${1:-build}
size=${2:-1g}
rounds=${ROUNDS:-5}
data_kinds=${DATA:-random zeros}
bin_a=${EPOCHFS_BIN:-$build/src/epochfs}
bin_b=${EPOCHFS_BIN_B:-}
for b in "$bin_a" ${bin_b:+"$bin_b"}; do
  [ -x "$b" ] || { echo "no epochfs binary at $b" >&2; exit 1; }
done
command -v fio >/dev/null || { echo "fio is missing (apt-get install fio)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "run as root (drop_caches)" >&2; exit 1; }

work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/epochfs-spill-bench.XXXXXX")
lower=$work/lower ssd=$work/ssd results=$work/results
mkdir -p "$lower" "$ssd/fio" "$work/mnt"
: > "$results"
pid= mnt= bw= cpu=
cleanup() {
  if [ -n "$pid" ]; then
    fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Every drop_caches adds to vmstat's drop_pagecache and drop_slab; this run's
# own add 2 each, so any more came from another process during the run.
drops_seen() { awk '$1 == "drop_pagecache" || $1 == "drop_slab" { n += $2 } END { print n + 0 }' /proc/vmstat; }
own_drops=0
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; own_drops=$((own_drops + 2)); }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

data_args() {  # data_args KIND: fio's buffer options for the data kind
  case $1 in
    random) echo --refill_buffers ;;
    zeros) echo --refill_buffers --buffer_compress_percentage=80 --buffer_compress_chunk=4096 ;;
    *) echo "unknown data kind $1 (random, zeros)" >&2; exit 1 ;;
  esac
}

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

mount_epochfs() {  # mount_epochfs BIN STORE_DIR
  mnt=$work/mnt
  "$1" -f -o "spill.path=$2,spill.staging=256MiB" "$lower" "$mnt" 2>> "$work/daemon.log" &
  pid=$!
  for _ in $(seq 100); do
    [ -r "$mnt/.epochfs/version" ] && return 0
    sleep 0.1
  done
  echo "mount failed:" >&2
  tail -5 "$work/daemon.log" >&2
  exit 1
}

# CPU seconds the daemon has used (all threads, user + system): steadier
# than wall time on a shared machine.
daemon_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / hz }' \
    "/proc/$pid/stat"
}

unmount_epochfs() {
  fusermount3 -u "$mnt"
  wait "$pid" || true
  pid=
}

# measure WHO RW KIND: sets bw to the MiB/s of one fio job and cpu to the
# daemon's CPU seconds for it (through the mount; "-" for fio) (no subshell, so
# that the drop count and the mount's pid stay in this shell); WHO is fio (the SSD directory
# itself), A or B (through that binary's mount, its own store directory).
measure() {
  local who=$1 rw=$2 kind=$3
  # shellcheck disable=SC2046
  if [ "$who" = fio ]; then
    [ "$rw" = write ] && rm -f "$ssd/fio/data"
    drop
    bw=$(fio_bw "$ssd/fio" "$rw" $(data_args "$kind"))
    cpu=-
  else
    local b=$bin_a; [ "$who" = B ] && b=$bin_b
    [ "$rw" = write ] && rm -rf "$ssd/store$who"
    drop  # a read starts from the SSD, not from staging
    mount_epochfs "$b" "$ssd/store$who"
    local c0; c0=$(daemon_cpu)
    bw=$(fio_bw "$mnt/.spill" "$rw" $(data_args "$kind"))
    cpu=$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[2]) - float(sys.argv[1])))' \
      "$c0" "$(daemon_cpu)")
    unmount_epochfs
  fi
}

who_list="fio A"
[ -n "$bin_b" ] && who_list="fio A B"

echo "spill tier vs fio on the same directory: $size, 1 MiB blocks, io_uring, O_DIRECT, QD 16;"
echo "$rounds rounds, fio and the mount back to back in each (order alternating), cold reads"
echo "binary A: $bin_a${bin_b:+   binary B: $bin_b}   directory: $work   cores: $(nproc)"
echo "load average before: $(loadavg)"
drops0=$(drops_seen)
echo "MiB/s; cpu: the daemon's CPU seconds for the job (all threads, user + system)"
printf "%-5s %-7s %-3s %8s %8s %6s %5s   %8s %8s %6s %5s   %s\n" round data who write fio ratio \
  cpu read fio ratio cpu "load average"
for r in $(seq "$rounds"); do
  for kind in $data_kinds; do
    order=$who_list
    [ $((r % 2)) -eq 0 ] && order=$(echo "$who_list" | tr ' ' '\n' | tac | tr '\n' ' ')
    declare -A w=() rd=() wc=() rc=()
    for who in $order; do measure "$who" write "$kind"; w[$who]=$bw; wc[$who]=$cpu; done
    for who in $order; do measure "$who" read "$kind"; rd[$who]=$bw; rc[$who]=$cpu; done
    rm -rf "$ssd/fio/data" "$ssd"/store?
    la=$(loadavg)
    for who in ${who_list#fio }; do
      echo "$kind $who ${w[$who]} ${w[fio]} ${rd[$who]} ${rd[fio]} ${wc[$who]} ${rc[$who]}" >> "$results"
      python3 -c 'import sys; r, k, who, ew, fw, er, fr, cw, cr, la = sys.argv[1:]
print("%-5s %-7s %-3s %8s %8s %6.2f %5s   %8s %8s %6.2f %5s   %s" % (r, k, who, ew, fw,
      float(ew) / float(fw), cw, er, fr, float(er) / float(fr), cr, la))' \
        "$r" "$kind" "$who" "${w[$who]}" "${w[fio]}" "${rd[$who]}" "${rd[fio]}" \
        "${wc[$who]}" "${rc[$who]}" "$la"
    done
    unset w rd wc rc
  done
done

# The ceiling of any FUSE data path here: null_fuse stores nothing (writes
# dropped, reads from one buffer) and runs as many threads as the spill
# area's mount, so what it reaches is what the kernel's FUSE transport
# allows; the spill area cannot pass it. One pair, for scale.
nullbin=$(dirname "$bin_a")/../tests/bench/null_fuse
null_row=
if [ "${NULL_FUSE:-1}" != 0 ] && [ -x "$nullbin" ]; then
  nmnt=$work/null
  mkdir -p "$nmnt"
  "$nullbin" "$nmnt" "${NULL_THREADS:-2}" &
  npid=$!
  for _ in $(seq 100); do mountpoint -q "$nmnt" && break; sleep 0.1; done
  nw=$(fio_bw "$nmnt" write --refill_buffers)
  nr=$(fio_bw "$nmnt" read --refill_buffers)
  fusermount3 -u "$nmnt"; wait "$npid" || true
  measure fio write random; fw=$bw
  measure fio read random; fr=$bw
  rm -f "$ssd/fio/data"
  null_row="$nw $fw $nr $fr"
fi

drops=$(( $(drops_seen) - drops0 - own_drops ))
echo "load average after: $(loadavg)"
python3 - "$results" "$null_row" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
names = {"random": "random (incompressible)", "zeros": "80% zeros"}
print("median of the rounds' ratios (min-max), mount / fio:")
for kind in dict.fromkeys(r[0] for r in rows):
    for who in dict.fromkeys(r[1] for r in rows):
        sel = [r for r in rows if r[0] == kind and r[1] == who]
        w = [float(r[2]) / float(r[3]) for r in sel]
        rd = [float(r[4]) / float(r[5]) for r in sel]
        cw = statistics.median(float(r[6]) for r in sel)
        cr = statistics.median(float(r[7]) for r in sel)
        print("%-23s %s  write ratio %.2f (%.2f-%.2f)  read ratio %.2f (%.2f-%.2f)  "
              "rounds >= 0.8: write %d/%d, read %d/%d; daemon CPU s (median): write %.2f, "
              "read %.2f" % (
                  names.get(kind, kind), who, statistics.median(w), min(w), max(w),
                  statistics.median(rd), min(rd), max(rd),
                  sum(x >= 0.8 for x in w), len(w), sum(x >= 0.8 for x in rd), len(rd), cw, cr))
if sys.argv[2]:
    nw, fw, nr, fr = map(float, sys.argv[2].split())
    print("null FUSE (no store)    write %.1f MiB/s, fio %.1f: ratio %.2f; read %.1f, fio %.1f: "
          "ratio %.2f (one pair)" % (nw, fw, nw / fw, nr, fr, nr / fr))
EOF
if [ "$drops" -gt 0 ]; then
  echo "WARNING: another process dropped the page cache $drops time(s) during this run" \
       "(vmstat drop_pagecache + drop_slab): the rounds it hit are disturbed"
fi
