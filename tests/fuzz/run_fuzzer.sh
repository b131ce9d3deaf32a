#!/usr/bin/env bash
# run_fuzzer.sh FUZZER CORPUS_DIR SECONDS [libFuzzer flags...]
# Runs one libFuzzer target for SECONDS over a scratch copy of its seed
# corpus (the committed corpus never grows), ASan/UBSan reports fatal. Exit 0
# when no input crashed; otherwise libFuzzer's report and the crashing input,
# kept under $EPOCHFS_FUZZ_ARTIFACTS (default: the current directory).
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3
shift 3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch" "$scratch.log"' EXIT
artifacts=${EPOCHFS_FUZZ_ARTIFACTS:-$PWD}
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
set +e +o pipefail
"$fuzzer" "$scratch" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/$(basename "$fuzzer")-" "$@" \
  >"$scratch.log" 2>&1
rc=$?
grep -E '^(INFO: Seed|#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss|==[0-9]+==|SUMMARY|Test unit written|contract broken|.*runtime error)' "$scratch.log"
rm -f "$scratch.log"
exit $rc
