#!/usr/bin/env bash
# Quick start, part 2: install dependencies (including the test tools), build
# paddle-image twice (Release with -Werror, and ASan+UBSan), prepare the cached test fixtures
# (a Debian base rootfs via debootstrap, offline-built wheels), and run every test.
# Both builds go through ccache (a second run, even from a clone in another folder,
# compiles nothing that did not change); every test runs under a time budget
# (PADDLE_IMAGE_TEST_BUDGET, default 600 s, tests/support/budget.sh); the wall time of
# each stage and the slowest tests are printed at the end, pass or fail
# (docs/testing.md has the figures).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

STAGE_LINES=()
STAGE=""
STAGE_START=$SECONDS
export PADDLE_IMAGE_TEST_TIMES
PADDLE_IMAGE_TEST_TIMES=$(mktemp "${TMPDIR:-/tmp}/paddle-image-test-times.XXXXXX")
stage() { # stage NAME: ends the stage before, starts this one
  if [[ -n $STAGE ]]; then
    STAGE_LINES+=("$(printf '%-58s %6ds' "$STAGE" $((SECONDS - STAGE_START)))")
  fi
  STAGE=$1
  STAGE_START=$SECONDS
  [[ -z $STAGE ]] || echo "== $STAGE"
}
summary() {
  local rc=$?
  [[ -z $STAGE ]] || STAGE_LINES+=("$(printf '%-58s %6ds%s' "$STAGE" $((SECONDS - STAGE_START)) \
    "$([[ $rc -ne 0 ]] && echo '  (failed here)')")")
  echo "== wall time per stage"
  printf '  %s\n' "${STAGE_LINES[@]}"
  printf '  %-58s %6ds\n' "total" "$SECONDS"
  if [[ -s $PADDLE_IMAGE_TEST_TIMES ]]; then
    echo "== slowest tests (budget ${PADDLE_IMAGE_TEST_BUDGET:-600}s each)"
    sort -k2,2nr "$PADDLE_IMAGE_TEST_TIMES" | head -12 | awk '{printf "  %-58s %6ds%s\n", $1, $2, ($3 == 0 ? "" : "  exit " $3)}'
  fi
  if command -v ccache >/dev/null 2>&1; then
    echo "== ccache: $(ccache --print-stats 2>/dev/null | awk -F'\t' '$1=="direct_cache_hit"{d=$2} $1=="preprocessed_cache_hit"{p=$2} $1=="cache_miss"{m=$2} END{printf "%d hits, %d misses since the stats were zeroed", d+p, m}')"
  fi
  rm -f "$PADDLE_IMAGE_TEST_TIMES"
  exit "$rc"
}
trap summary EXIT
budget() { "$ROOT/tests/support/budget.sh" "$@"; }

stage "set-up (Debian packages)"
"$ROOT/scripts/setup.sh" --test
command -v ccache >/dev/null 2>&1 && ccache --zero-stats >/dev/null

stage "fixtures (Debian rootfs, wheels, debs, schemas)"
export PADDLE_IMAGE_TEST_CACHE=${PADDLE_IMAGE_TEST_CACHE:-$HOME/.cache/paddle-image-test}
mkdir -p "$PADDLE_IMAGE_TEST_CACHE"
# Fixtures are made before any test runs, so the tests themselves touch no network.
"$ROOT/scripts/make-test-base.sh" "$PADDLE_IMAGE_TEST_CACHE/base"
"$ROOT/tests/support/build-wheels.sh" "$PADDLE_IMAGE_TEST_CACHE/wheels"
# The wheels the test package index serves (tests/integration/wheels_index.sh), with a
# 200 MiB stored wheel for the memory check.
python3 "$ROOT/tests/support/make-index-wheels.py" "$PADDLE_IMAGE_TEST_CACHE/index-wheels" --big-mb 200
# The Debian packages the release test installs paddle-image's .deb with, offline.
"$ROOT/tests/support/fetch-debs.sh" "$PADDLE_IMAGE_TEST_CACHE/debs" "$PADDLE_IMAGE_TEST_CACHE/base/rootfs"
# The official CycloneDX schema comes from the npm registry; a machine that cannot
# reach it (or does not trust its TLS) still runs every test, the SBOM checks then
# against the required fields only (the signing test says which it used).
"$ROOT/tests/support/fetch-schemas.sh" "$PADDLE_IMAGE_TEST_CACHE/schemas" ||
  echo "test.sh: the official CycloneDX schema could not be fetched; CycloneDX documents are checked for the required fields only"

# The main test build is Release (-O3), warnings as errors, so it stays warning-clean
# where users and packagers build; the second build adds the sanitizers.
stage "build: Release, -Werror"
"$ROOT/scripts/build.sh" "$ROOT/build" -DCMAKE_BUILD_TYPE=Release -DPADDLE_IMAGE_WERROR=ON
# The sanitizer build is clang's, instrumented for libFuzzer too: the fuzz targets link
# its module libraries, so they cost a few links, not a third build.
stage "build: ASan+UBSan (clang, libFuzzer-instrumented), -Werror"
# A build-asan/ configured with another compiler (GCC, before) starts over.
if [[ -f $ROOT/build-asan/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$ROOT/build-asan/CMakeCache.txt"; then
  rm -rf "$ROOT/build-asan"
fi
CC=clang CXX=clang++ "$ROOT/scripts/build.sh" "$ROOT/build-asan" -DPADDLE_IMAGE_SANITIZE=ON \
  -DPADDLE_IMAGE_FUZZ=ON -DPADDLE_IMAGE_WERROR=ON

stage "tests: unit (ASan+UBSan)"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
budget asan.unit "$ROOT/build-asan/tests/unit_tests"
stage "tests: bad-input, repro, registry x3, registry cache, racy clean, failure injection (ASan+UBSan)"
# The registry client's threads, retries and error paths under the sanitizers.
for t in bad_input repro registry registry_auth registry_faults registry_cache racy_clean inject; do
  PI="$ROOT/build-asan/cli/paddle-image" TEST_WORK="$ROOT/build-asan/test-work/$t" \
    budget "asan.integration.$t" bash "$ROOT/tests/integration/$t.sh"
done
stage "tests: fuzz, every target ${FUZZ_SECONDS:-25} s (ASan+UBSan)"
budget fuzz "$ROOT/tests/fuzz/run.sh" "$ROOT/build-asan" --seconds "${FUZZ_SECONDS:-25}"
stage "tests: all (CTest, Release build)"
cd "$ROOT/build"
ctest --output-on-failure
stage ""
