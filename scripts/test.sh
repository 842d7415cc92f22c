#!/usr/bin/env bash
# Quick start, part 2: install dependencies (including the test tools), build
# paddle-image twice (Release with -Werror, in scripts/example.sh's configuration, and
# ASan+UBSan), prepare the cached test fixtures (a Debian base rootfs via debootstrap,
# offline-built wheels), and run every test: one CTest schedule, side by side
# (PADDLE_IMAGE_TEST_JOBS at a time, default three times the cores), for the Release build's
# integration tests, the sanitizer build's unit and integration tests and every fuzz
# target. Both builds go through ccache (a second run, even from a clone in another
# folder, compiles nothing that did not change); every test runs under a time budget
# (PADDLE_IMAGE_TEST_BUDGET, default 600 s, tests/support/budget.sh); the wall time of
# each stage, each build's compile seconds and ccache hits, and the slowest tests are
# printed at the end, pass or fail (docs/testing.md has the figures).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

STAGE_LINES=()
STAGE=""
STAGE_START=$SECONDS
export PADDLE_IMAGE_TEST_TIMES
PADDLE_IMAGE_TEST_TIMES=$(mktemp "${TMPDIR:-/tmp}/paddle-image-test-times.XXXXXX")
STAGE_NOTE=""
stage() { # stage NAME: ends the stage before, starts this one
  if [[ -n $STAGE ]]; then
    STAGE_LINES+=("$(printf '%-58s %6ds%s' "$STAGE" $((SECONDS - STAGE_START)) "$STAGE_NOTE")")
  fi
  STAGE=$1
  STAGE_NOTE=""
  STAGE_START=$SECONDS
  [[ -z $STAGE ]] || echo "== $STAGE"
}
ccache_counts() { # "HITS MISSES" so far
  ccache --print-stats 2>/dev/null | awk -F'\t' '$1=="direct_cache_hit"{d=$2} $1=="preprocessed_cache_hit"{p=$2}
    $1=="cache_miss"{m=$2} END{printf "%d %d\n", d+p, m}'
}
build_tree() { # build_tree DIR [ENV=VALUE...] -- BUILD_ARGS...: scripts/build.sh, then its compile figures
  local dir=$1
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  measured "$dir" env "${envs[@]}" "$ROOT/scripts/build.sh" "$dir" "$@"
}
measured() { # measured DIR CMD...: runs CMD, a build into DIR, then its compile figures
  local dir=$1 log_lines=0 before after
  shift
  [[ -f $dir/.ninja_log ]] && log_lines=$(wc -l <"$dir/.ninja_log")
  before=$(ccache_counts || echo "0 0")
  "$@"
  after=$(ccache_counts || echo "0 0")
  if [[ ! -f $dir/.ninja_log ]]; then # nothing was built there (the pin's binary is this tree's)
    STAGE_NOTE="  (nothing to build)"
    return 0
  fi
  # Compile seconds: the sum of this run's compile jobs (.ninja_log: start and end in ms).
  STAGE_NOTE=$(tail -n +"$((log_lines + 1))" "$dir/.ninja_log" | awk -v b="$before" -v a="$after" '
    !/^#/ && $4 ~ /\.o$/ {n++; ms+=$2-$1}
    END{split(b,x," "); split(a,y," ");
      printf "  (%d objects, %.0f compile s; ccache %d hits, %d misses)", n, ms/1000, y[1]-x[1], y[2]-x[2]}')
}
summary() {
  local rc=$?
  if [[ -n ${FIXTURES_PID:-} ]]; then # the run stopped before the fixtures were waited for
    kill -- "-$FIXTURES_PID" 2>/dev/null || true
    wait "$FIXTURES_PID" 2>/dev/null || true
    rm -f "${FIXTURES_LOG:-}"
  fi
  [[ -z $STAGE ]] || STAGE_LINES+=("$(printf '%-58s %6ds%s' "$STAGE" $((SECONDS - STAGE_START)) \
    "$([[ $rc -ne 0 ]] && echo '  (failed here)')")")
  echo "== wall time per stage"
  printf '  %s\n' "${STAGE_LINES[@]}"
  printf '  %-58s %6ds\n' "total" "$SECONDS"
  if [[ -s $PADDLE_IMAGE_TEST_TIMES ]]; then
    echo "== slowest tests (budget ${PADDLE_IMAGE_TEST_BUDGET:-600}s each)"
    sort -k2,2nr "$PADDLE_IMAGE_TEST_TIMES" | head -12 |
      awk '{printf "  %-50s %6ds %5d cpu s (%d user, %d system)%s\n", $1, $2, $4, $5, $6, ($3 == 0 ? "" : "  exit " $3)}'
    awk '{n++; w+=$2; c+=$4; u+=$5; y+=$6} END{printf "  %d tests under the budget (the lints are not): %d s of test time, %d cpu s (%d user, %d system)\n", n, w, c, u, y}' "$PADDLE_IMAGE_TEST_TIMES"
  fi
  if command -v ccache >/dev/null 2>&1; then
    read -r hits misses < <(ccache_counts)
    echo "== ccache: $hits hits, $misses misses since the stats were zeroed"
  fi
  rm -f "$PADDLE_IMAGE_TEST_TIMES"
  exit "$rc"
}
trap summary EXIT
budget() { "$ROOT/tests/support/budget.sh" "$@"; }

stage "set-up (Debian packages)"
"$ROOT/scripts/setup.sh" --test
command -v ccache >/dev/null 2>&1 && ccache --zero-stats >/dev/null

# The fixtures are made in the background while both trees compile: making them waits
# on Debian's mirror, the npm registry and the disk far more than on the cores (75 s on
# a fresh machine, before the builds, with the cores idle). Their output is shown when
# they are done; the tests start only after them.
export PADDLE_IMAGE_TEST_CACHE=${PADDLE_IMAGE_TEST_CACHE:-$HOME/.cache/paddle-image-test}
mkdir -p "$PADDLE_IMAGE_TEST_CACHE"
make_fixtures() {
  # Fixtures are made before any test runs, so the tests themselves touch no network.
  # The quick start's base (scripts/example.sh), where it made one, is the same rootfs.
  REUSE_FROM="$ROOT/.cache/example-base" "$ROOT/scripts/make-test-base.sh" "$PADDLE_IMAGE_TEST_CACHE/base"
  "$ROOT/tests/support/build-wheels.sh" "$PADDLE_IMAGE_TEST_CACHE/wheels"
  # The wheels the test package index serves (tests/integration/wheels_index.sh), with a
  # 200 MiB stored wheel for the memory check.
  python3 "$ROOT/tests/support/make-index-wheels.py" "$PADDLE_IMAGE_TEST_CACHE/index-wheels" --big-mb 200
  # The Debian packages the release test installs paddle-image's .deb with, offline.
  "$ROOT/tests/support/fetch-debs.sh" "$PADDLE_IMAGE_TEST_CACHE/debs" "$PADDLE_IMAGE_TEST_CACHE/base/rootfs"
  # The signed apt repositories the debs layer test installs from (real Debian packages
  # signed with a test key, and Debian's own signed index for the suite).
  "$ROOT/tests/support/make-debs-repo.sh" "$PADDLE_IMAGE_TEST_CACHE/debs-repo" "$PADDLE_IMAGE_TEST_CACHE/base/rootfs"
  # The official CycloneDX schema comes from the npm registry; a machine that cannot
  # reach it (or does not trust its TLS) still runs every test, the SBOM checks then
  # against the required fields only (the signing test says which it used).
  "$ROOT/tests/support/fetch-schemas.sh" "$PADDLE_IMAGE_TEST_CACHE/schemas" ||
    echo "test.sh: the official CycloneDX schema could not be fetched; CycloneDX documents are checked for the required fields only"
}
FIXTURES_LOG=$(mktemp "${TMPDIR:-/tmp}/paddle-image-fixtures.XXXXXX")
FIXTURES_START=$SECONDS
set -m # a process group of its own, so that a stopped run stops debootstrap and the rest too
(
  set -euo pipefail
  make_fixtures
  echo "fixtures: made in $((SECONDS - FIXTURES_START)) s, beside the builds"
) >"$FIXTURES_LOG" 2>&1 </dev/null &
FIXTURES_PID=$!
set +m
fixtures_done() { # waits for the fixtures, shows their output; exits when they failed
  local rc=0
  wait "$FIXTURES_PID" || rc=$?
  FIXTURES_PID=""
  sed 's/^/  | /' "$FIXTURES_LOG"
  rm -f "$FIXTURES_LOG"
  if [[ $rc -ne 0 ]]; then
    echo "test.sh: making the test fixtures failed (exit $rc; their output is above)" >&2
    exit "$rc"
  fi
}

# The main test build is Release (-O2), warnings as errors, so it stays warning-clean
# where users and packagers build; it is scripts/example.sh's configuration, so after
# the quick start only the test helpers are left to compile. The unit tests are compiled
# once, in the sanitizer build, and run there; this tree's CTest runs that build's
# tests too (PADDLE_IMAGE_SANITIZER_BUILD).
stage "build: Release, -Werror"
build_tree "$ROOT/build" -- -DPADDLE_IMAGE_UNIT_TESTS=OFF "-DPADDLE_IMAGE_SANITIZER_BUILD=$ROOT/build-asan"
# The sanitizer build is clang's, instrumented for libFuzzer too: the fuzz targets link
# its module libraries, so they cost a few links, not a third build.
stage "build: ASan+UBSan (clang, libFuzzer-instrumented), -Werror"
# A build-asan/ configured with another compiler (GCC, before) starts over.
if [[ -f $ROOT/build-asan/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$ROOT/build-asan/CMakeCache.txt"; then
  rm -rf "$ROOT/build-asan"
fi
build_tree "$ROOT/build-asan" CC=clang CXX=clang++ -- -DPADDLE_IMAGE_SANITIZE=ON -DPADDLE_IMAGE_FUZZ=ON
# The pinned older binary integration.same_outputs compares this one with
# (tests/support/same-outputs.pin): built here, with both cores, in its worktree's own
# build/ (ccache serves what the two trees share), not inside the test's time budget.
stage "build: pinned binary for same_outputs (Release)"
read -r PINNED _ <"$ROOT/tests/support/same-outputs.pin"
measured "$ROOT/build/same-outputs-old/src/build" env SAME_OUTPUTS_OLD_DIR="$ROOT/build/same-outputs-old" \
  bash "$ROOT/tests/support/same-outputs.sh" --prepare "$PINNED"

# Every test in one schedule: the Release build's integration tests, the sanitizer
# build's unit tests, integration tests (bad input, the registry client's threads,
# retries and error paths, the registry cache's hung, refusing, damaged and forged
# caches, failure injection, debs, remote sources, a hostile package index) and fuzz
# targets (FUZZ_SECONDS each, default 25), self-tests and lints. Tests whose checks measure time hold CTest's
# `timing` lock (tests/CMakeLists.txt).
stage "fixtures: waiting for the rest (made beside the builds)"
fixtures_done
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
JOBS=${PADDLE_IMAGE_TEST_JOBS:-$(($(nproc) * 3))}
stage "tests: all, $JOBS at a time (CTest: Release, ASan+UBSan, fuzz)"
cd "$ROOT/build"
ctest --output-on-failure -j "$JOBS"
stage ""
