#!/usr/bin/env bash
# A longer fuzzing run for developers: builds the clang sanitizer build with libFuzzer
# instrumentation (the one scripts/test.sh makes, build-asan/ by default) and runs every
# fuzz target, or those named, for N minutes each, one per core, printing the inputs run
# per target. The corpus each target grows is kept in BUILD/fuzz-work/corpus/TARGET and
# reused by the next run; crashes are named with their input (see tests/fuzz/run.sh).
# With --merge, what the run found that reaches new code is then merged, minimised
# (libFuzzer -merge=1), into the committed seed corpus tests/fuzz/corpus/TARGET, for a
# commit: CI's short runs start where the long ones got to.
#
#   scripts/fuzz.sh [--minutes N] [--jobs J] [--build DIR] [--merge] [TARGET...]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MINUTES=10
JOBS=$(nproc)
BUILD=$ROOT/build-asan
MERGE=0
TARGETS=()
while [[ $# -gt 0 ]]; do
  case $1 in
  --minutes) MINUTES=$2; shift 2 ;;
  --jobs) JOBS=$2; shift 2 ;;
  --build) BUILD=$2; shift 2 ;;
  --merge) MERGE=1; shift ;;
  -h | --help) sed -n 2,12p "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  *) TARGETS+=("$1"); shift ;;
  esac
done
[[ $MINUTES =~ ^[0-9]+$ && $MINUTES -gt 0 ]] || { echo "fuzz.sh: --minutes takes a whole number above 0" >&2; exit 2; }
CC=clang CXX=clang++ "$ROOT/scripts/build.sh" "$BUILD" -DPADDLE_IMAGE_SANITIZE=ON -DPADDLE_IMAGE_FUZZ=ON \
  -DPADDLE_IMAGE_WERROR=ON
ninja -C "$BUILD" fuzz_targets >/dev/null
status=0
bash "$ROOT/tests/fuzz/run.sh" "$BUILD" --seconds $((MINUTES * 60)) --jobs "$JOBS" "${TARGETS[@]}" || status=$?
if [[ $MERGE -eq 1 ]]; then
  if [[ ${#TARGETS[@]} -eq 0 ]]; then
    for f in "$ROOT"/tests/fuzz/targets/fuzz_*.cpp; do TARGETS+=("$(basename "$f" .cpp)"); done
  fi
  for t in "${TARGETS[@]}"; do
    before=$(find "$ROOT/tests/fuzz/corpus/$t" -type f | wc -l)
    mkdir -p "$BUILD/fuzz-work/tmp-merge"
    if ! TMPDIR=$BUILD/fuzz-work/tmp-merge UBSAN_OPTIONS=halt_on_error=1 "$BUILD/tests/fuzz/$t" -merge=1 -timeout=10 \
      -rss_limit_mb=2048 "$ROOT/tests/fuzz/corpus/$t" "$BUILD/fuzz-work/corpus/$t" >"$BUILD/fuzz-work/$t.merge.log" 2>&1; then
      echo "$t: the merge failed (see $BUILD/fuzz-work/$t.merge.log)"
      status=1
      continue
    fi
    echo "$t: corpus $before -> $(find "$ROOT/tests/fuzz/corpus/$t" -type f | wc -l) files" \
      "($(du -sh "$ROOT/tests/fuzz/corpus/$t" | cut -f1))"
  done
  rm -rf "$BUILD/fuzz-work/tmp-merge"
fi
exit $status
