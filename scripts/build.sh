#!/usr/bin/env bash
# Configures and builds paddle-image. Usage: scripts/build.sh [BUILD_DIR] [extra cmake args]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
shift || true
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C "$BUILD" -j"$(nproc)"
