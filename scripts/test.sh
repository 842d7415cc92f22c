#!/usr/bin/env bash
# Quick start, part 2: install dependencies (including the test tools), build
# paddle-image twice (Release with -Werror, and ASan+UBSan), prepare the cached test fixtures
# (a Debian base rootfs via debootstrap, offline-built wheels), and run every test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/scripts/setup.sh" --test

export PADDLE_IMAGE_TEST_CACHE=${PADDLE_IMAGE_TEST_CACHE:-$HOME/.cache/paddle-image-test}
mkdir -p "$PADDLE_IMAGE_TEST_CACHE"
# Fixtures are made before any test runs, so the tests themselves touch no network.
"$ROOT/scripts/make-test-base.sh" "$PADDLE_IMAGE_TEST_CACHE/base"
"$ROOT/tests/support/build-wheels.sh" "$PADDLE_IMAGE_TEST_CACHE/wheels"
# The wheels the test package index serves (tests/integration/wheels_index.sh), with a
# 200 MiB stored wheel for the memory check.
python3 "$ROOT/tests/support/make-index-wheels.py" "$PADDLE_IMAGE_TEST_CACHE/index-wheels" --big-mb 200
# The official CycloneDX schema comes from the npm registry; a machine that cannot
# reach it (or does not trust its TLS) still runs every test, the SBOM checks then
# against the required fields only (the signing test says which it used).
"$ROOT/tests/support/fetch-schemas.sh" "$PADDLE_IMAGE_TEST_CACHE/schemas" ||
  echo "test.sh: the official CycloneDX schema could not be fetched; CycloneDX documents are checked for the required fields only"

# The main test build is Release (-O3), warnings as errors, so it stays warning-clean
# where users and packagers build; the second build adds the sanitizers.
"$ROOT/scripts/build.sh" "$ROOT/build" -DCMAKE_BUILD_TYPE=Release -DPADDLE_IMAGE_WERROR=ON
"$ROOT/scripts/build.sh" "$ROOT/build-asan" -DPADDLE_IMAGE_SANITIZE=ON -DPADDLE_IMAGE_WERROR=ON

echo "== unit, bad-input, repro and registry tests (ASan+UBSan build)"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$ROOT/build-asan/tests/unit_tests"
PI="$ROOT/build-asan/cli/paddle-image" TEST_WORK="$ROOT/build-asan/test-work/bad_input" \
  bash "$ROOT/tests/integration/bad_input.sh"
PI="$ROOT/build-asan/cli/paddle-image" TEST_WORK="$ROOT/build-asan/test-work/repro" \
  bash "$ROOT/tests/integration/repro.sh"
# The registry client's threads, retries and error paths under the sanitizers.
for t in registry registry_auth registry_faults; do
  PI="$ROOT/build-asan/cli/paddle-image" TEST_WORK="$ROOT/build-asan/test-work/$t" \
    bash "$ROOT/tests/integration/$t.sh"
done
echo "== all tests"
cd "$ROOT/build"
ctest --output-on-failure --timeout 1800
