#!/usr/bin/env bash
# Builds the fuzz targets with clang's libFuzzer (+ASan/UBSan) and runs each for a short
# fixed budget (FUZZ_SECONDS, default 20) from its seed corpus: the doctor's parsers
# (seeds: the fixture hosts' /proc files), then the Python packaging parsers. Exit
# status is non-zero on a crash, naming the target.
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
# fuzz_run TARGET LOG CORPUS [LIBFUZZER ARGS...]: runs $OUT/TARGET for the budget; on a
# crash prints the log's end and fails naming the target (and the crash-* input file).
fuzz_run() {
  local target=$1 log=$OUT/$2 corpus=$3
  shift 3
  "$OUT/$target" -max_total_time="$SECONDS_BUDGET" -rss_limit_mb=1024 -print_final_stats=1 "$@" "$corpus" 2>"$log" || {
    tail -40 "$log"
    echo "$target: FAILED (see $log; the input is the crash-* file it names)"
    exit 1
  }
  local runs
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
  echo "$target: $runs inputs in ${SECONDS_BUDGET}s, no crash"
  [[ "$runs" -gt 0 ]]
}
fuzz_run fuzz_parsers fuzz.log "$OUT/corpus"

# The Python packaging parsers (PEP 440, PEP 508 requirements and markers, METADATA,
# RECORD): what index pages and wheels from strangers carry. Seeds: the bundled lock's
# lines and a few of each form; fixed seed, so a CI run is repeatable.
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I "$ROOT" \
  "$ROOT/tests/fuzz/fuzz_python.cpp" "$ROOT/python/pep440.cpp" "$ROOT/python/requirement.cpp" \
  "$ROOT/python/metadata.cpp" -o "$OUT/fuzz_python"
mkdir -p "$OUT/corpus-python"
n=0
pseed() { # SELECTOR TEXT
  { printf "\\$(printf '%03o' "$1")"; printf '%s' "$2"; } >"$OUT/corpus-python/seed-$n"
  n=$((n + 1))
}
while IFS= read -r line; do
  line=${line%% \\}
  [[ -z $line || $line == \#* || $line == --* ]] && continue
  pseed 2 "${line%% --hash*}"
done <"$ROOT/examples/ocr-train/wheels.lock"
for v in 1.0 2.6.1.post120 3.0.0b1 1!2.0rc1.post3.dev4+local.5 v1.0-1; do pseed 0 "$v"; done
for sp in ">=1.0,<2.0" "==2.6.*" "~=3.3" "===weird" "!=1.5.*,>0"; do pseed 1 "$sp"; done
pseed 2 'opt-einsum ==3.3.0 ; python_version >= "3.8" and (sys_platform == "linux" or extra == "test")'
pseed 3 "$(printf 'Metadata-Version: 2.1\nName: paddlepaddle-gpu\nVersion: 2.6.1\nRequires-Dist: opt-einsum ==3.3.0\n  folded\n\nbody')"
pseed 4 "$(printf 'paddle/__init__.py,sha256=abc,10\n"a,b.py",,\n../../../bin/x,,\n')"
fuzz_run fuzz_python fuzz-python.log "$OUT/corpus-python" -seed=1
