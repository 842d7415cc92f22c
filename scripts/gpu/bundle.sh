#!/usr/bin/env bash
# Prepares what scripts/gpu/real-gpu.sh needs on a GPU machine that has no package
# registry: the paddle-image binary with every shared library ldd lists (glibc's own
# loader and libc kept apart, used only when the machine's glibc is older than the
# binary needs), and the test images as one OCI layout, each tagged for the verdict it
# expects (expected.tsv, written before any run).
#   [EXPECTED=FILE] scripts/gpu/bundle.sh BUILD_DIR OUT_DIR
# EXPECTED: the verdicts for another GPU (default expected.tsv, written for an H200;
# expected-h100.tsv for an H100 80GB).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${1:?usage: bundle.sh BUILD_DIR OUT_DIR}
OUT=${2:?usage: bundle.sh BUILD_DIR OUT_DIR}
BIN="$BUILD/cli/paddle-image"
[[ -x "$BIN" ]] || { echo "bundle.sh: $BIN is not built (run scripts/build.sh)" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/glibc" "$OUT/images"
cp -L "$BIN" "$OUT/bin/paddle-image"
ldd "$BIN" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
  ld-linux*.so* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.*)
    cp -L "$lib" "$OUT/glibc/" ;;
  *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
# The highest GLIBC_ symbol version the binary and its bundled libraries ask for.
objdump -T "$OUT/bin/paddle-image" "$OUT"/lib/*.so* 2>/dev/null | grep -Eo 'GLIBC_[0-9.]+' | sort -uV | tail -1 \
  >"$OUT/glibc-needed.txt"
cp "$HERE/real-gpu.sh" "$HERE/../../tests/support/compare_nvidia_smi.py" "$OUT/"
cp "${EXPECTED:-$HERE/expected.tsv}" "$OUT/expected.tsv"
"$HERE/images.sh" "$BIN" "$OUT/images"
du -sh "$OUT" | awk -v out="$OUT" '{print "bundle.sh: " $1 " in " out}'
