#!/usr/bin/env bash
# Builds the doctor's parser fuzz target with clang's libFuzzer (+ASan/UBSan) and runs
# it for a short fixed budget (FUZZ_SECONDS, default 20) from the seed corpus (the
# fixture hosts' /proc files). Exit status is libFuzzer's: non-zero on a crash.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${1:-$ROOT/build/fuzz}
SECONDS_BUDGET=${FUZZ_SECONDS:-20}
mkdir -p "$OUT/corpus"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I "$ROOT" \
  "$ROOT/tests/fuzz/fuzz_parsers.cpp" "$ROOT/doctor/parse.cpp" -o "$OUT/fuzz_parsers"
# Seeds: real host files, each prefixed with the byte that selects its parser.
i=0
seed() { # SELECTOR FILE
  [[ -f "$2" ]] || return 0
  { printf "\\$(printf '%03o' "$1")"; head -c 4096 "$2"; } >"$OUT/corpus/seed-$i"
  i=$((i + 1))
}
for f in "$ROOT"/tests/fixtures/hosts/*/root/proc/driver/nvidia/version; do seed 0 "$f"; done
for f in "$ROOT"/tests/fixtures/hosts/*/root/proc/devices; do seed 1 "$f"; done
for f in "$ROOT"/tests/fixtures/hosts/*/root/proc/modules; do seed 2 "$f"; done
for f in "$ROOT"/tests/fixtures/hosts/*/root/proc/driver/nvidia/gpus/*/information; do seed 3 "$f"; done
seed 4 /etc/ld.so.cache
"$OUT/fuzz_parsers" -max_total_time="$SECONDS_BUDGET" -rss_limit_mb=1024 -print_final_stats=1 "$OUT/corpus" 2>"$OUT/fuzz.log" || {
  tail -40 "$OUT/fuzz.log"
  echo "fuzz_parsers: FAILED (see $OUT/fuzz.log)"
  exit 1
}
runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$OUT/fuzz.log" | grep -Eo '[0-9]+$' || echo 0)
echo "fuzz_parsers: $runs inputs in ${SECONDS_BUDGET}s, no crash"
[[ "$runs" -gt 0 ]]
