#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz/targets) of a build made with clang,
# PADDLE_IMAGE_SANITIZE=ON and PADDLE_IMAGE_FUZZ=ON, each for a bounded time with a
# fixed -seed, starting from its committed seed corpus and the committed crash inputs
# (tests/fuzz/corpus, tests/fuzz/regressions) with its dictionary (tests/fuzz/dict).
# Targets run side by side, one per core. Exits non-zero when any target crashes,
# leaks, times out on one input or trips a sanitizer, naming the target and the input
# file libFuzzer saved.
#
#   run.sh BUILD_DIR [--seconds S] [--jobs N] [--work DIR] [TARGET...]
#
# CTest's fuzz.* tests (scripts/test.sh) run it for one target each (S=FUZZ_SECONDS,
# default 25); scripts/fuzz.sh runs it for minutes. Inputs that reach new code go to WORK/corpus/TARGET (kept between
# runs, never into the committed corpus); each target's log is WORK/TARGET.log.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${1:?usage: run.sh BUILD_DIR [--seconds S] [--jobs N] [--work DIR] [TARGET...]}
shift
SECS=${FUZZ_SECONDS:-25}
JOBS=$(nproc)
WORK=$BUILD/fuzz-work
TARGETS=()
while [[ $# -gt 0 ]]; do
  case $1 in
  --seconds) SECS=$2; shift 2 ;;
  --jobs) JOBS=$2; shift 2 ;;
  --work) WORK=$2; shift 2 ;;
  -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  *) TARGETS+=("$1"); shift ;;
  esac
done
if [[ ${#TARGETS[@]} -eq 0 ]]; then
  for f in "$HERE"/targets/fuzz_*.cpp; do TARGETS+=("$(basename "$f" .cpp)"); done
fi
mkdir -p "$WORK"
# The sanitizer build recovers from UBSan reports by default: here each one is a failure.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# run_one TARGET: one line on stdout: "TARGET: OK N inputs in S s (corpus C)" or
# "TARGET: FAILED ..." (exit 1).
run_one() {
  local t=$1 bin=$BUILD/tests/fuzz/$1 log=$WORK/$1.log
  local corpus=$WORK/corpus/$t artifacts=$WORK/artifacts/$t
  if [[ ! -x $bin ]]; then
    echo "$t: FAILED: $bin is not built (ninja -C $BUILD fuzz_targets)"
    return 1
  fi
  rm -rf "$artifacts" "$WORK/tmp-$t"
  mkdir -p "$corpus" "$artifacts" "$WORK/tmp-$t"
  local seeds=("$HERE/corpus/$t")
  [[ -d $HERE/regressions/$t ]] && seeds+=("$HERE/regressions/$t")
  local args=(-seed=1 -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536
    -print_final_stats=1 -artifact_prefix="$artifacts/")
  [[ -f $HERE/dict/$t.dict ]] && args+=(-dict="$HERE/dict/$t.dict")
  local rc=0
  TMPDIR=$WORK/tmp-$t "$bin" "${args[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1 || rc=$?
  rm -rf "$WORK/tmp-$t"
  local runs
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1 || true)
  local input
  input=$(find "$artifacts" -type f | head -1)
  if [[ $rc -ne 0 || -n $input ]]; then
    local what
    what=$(grep -Eo 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer): [a-zA-Z -]+' "$log" | head -1 || true)
    [[ -n $what ]] || what=$(grep -m1 -E 'runtime error:|terminate called|uncaught exception' "$log" || echo "exit $rc")
    echo "$t: FAILED after ${runs:-0} inputs: $what; input: ${input:-(none saved)}; log: $log"
    return 1
  fi
  echo "$t: OK, ${runs:-0} inputs in ${SECS} s, corpus $(find "$corpus" -type f | wc -l) files"
}
export -f run_one
export BUILD WORK HERE SECS

echo "fuzz: ${#TARGETS[@]} targets, ${SECS} s each, ${JOBS} at a time, -seed=1 (logs: $WORK)"
status=0
printf '%s\n' "${TARGETS[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one {}' || status=1
if [[ $status -ne 0 ]]; then
  echo "fuzz: FAILED (each failing target is named above with its input; replay one with" \
    "BUILD/tests/fuzz/TARGET INPUT, minimise it with -minimize_crash=1, and commit it under" \
    "tests/fuzz/regressions/TARGET/ once fixed)"
fi
exit $status
