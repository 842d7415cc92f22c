#!/usr/bin/env bash
# The quick start's scripts/example.sh, with this build's binary (nothing installed or
# compiled): the scratch example builds and is inspected, and the example on a Debian
# base runs under runc and prints what its program prints. The base is the suite's own
# debootstrap fixture, made by the same scripts/make-test-base.sh, so no second
# debootstrap runs; a base a developer's run already left in .cache/example-base is used
# as it is.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
[[ -f $FIXTURES/base/.done ]] || { echo "missing fixture $FIXTURES/base (run scripts/test.sh)"; exit 1; }
B=$ROOT/.cache/example-base
if [[ ! -f $B/.done ]]; then
  rm -rf "$B" && mkdir -p "$ROOT/.cache"
  cp -al "$FIXTURES/base" "$B" 2>/dev/null || cp -a "$FIXTURES/base" "$B"
fi
rc=0
PADDLE_IMAGE_EXAMPLE_PI=$PI bash "$ROOT/scripts/example.sh" >out.txt 2>err.txt || rc=$?
cat out.txt
check "scripts/example.sh exits 0 (exit $rc)" test "$rc" -eq 0
check "the scratch example is built and inspected" grep -q "files layer 'app'" out.txt
check "the example on the Debian base takes its Python from the base" \
  grep -q "io.paddle-image.python.version = 3.11 (from the base" err.txt
check "it runs under runc: the program prints what it trained" grep -qx "training PP-OCRv4_det with 3 epochs" out.txt
check "... through the wheel the deps layer installed" grep -qx "normalized box: (0.01, 0.02, 0.11, 0.22)" out.txt
check "no bundle is left behind" test ! -e "$ROOT/examples/ocr-train/out/bundle"
finish
