#!/usr/bin/env bash
# Configures and builds paddle-image.
#   scripts/build.sh [BUILD_DIR] [CMAKE_ARG...] [-- NINJA_TARGET...]
# The default configuration is the one scripts/example.sh and scripts/test.sh share
# (Release, warnings as errors, a unity build): the quick start's build is the test
# command's, which then compiles only what the example did not need. Extra CMake
# arguments come after it (a later -D wins); targets after `--` (default: all).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
shift || true
CMAKE_ARGS=()
while [[ $# -gt 0 && $1 != -- ]]; do CMAKE_ARGS+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPADDLE_IMAGE_WERROR=ON "${CMAKE_ARGS[@]}" >/dev/null
ninja -C "$BUILD" -j"$(nproc)" "$@"
