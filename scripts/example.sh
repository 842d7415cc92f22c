#!/usr/bin/env bash
# Quick start, part 1: install dependencies, build paddle-image, build the bundled
# example image (examples/ocr-train) and run it.
#   1. spec.yaml on `scratch` into examples/ocr-train/out/ocr-train (an OCI layout),
#      and `paddle-image inspect` of it. Nothing runs in it: scratch has no python3.
#   2. The image running: a small real base made as the tests make theirs (a Debian 12
#      rootfs with python3 from debootstrap, turned into an OCI image by paddle-image,
#      both cached under .cache/example-base for the next run), spec-debian.yaml built
#      on it into out/ocr-train-debian, unpacked with umoci and run with runc: the
#      example's program prints what it trained. Where the base cannot be made (not
#      root, Debian's mirror out of reach) the script says why and stops after step 1.
# No registry and no network beyond Debian's packages.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# PADDLE_IMAGE_EXAMPLE_PI=BINARY: that binary, nothing installed or compiled
# (tests/integration/example.sh runs the script so, beside the suite's own builds).
PI=${PADDLE_IMAGE_EXAMPLE_PI:-}
[[ -n $PI ]] || "$ROOT/scripts/setup.sh" --example
BASE=$ROOT/.cache/example-base
# The Debian base is made while paddle-image compiles: debootstrap waits on the mirror
# and on dpkg, the compiler on the two cores. (At nice 19 it made no difference that
# runs could tell apart: 333 s in a fresh chroot against 328 s without, both at -O2.)
base_pid=""
if [[ $(id -u) -eq 0 ]]; then
  mkdir -p "$ROOT/.cache"
  "$ROOT/scripts/make-test-base.sh" "$BASE" >"$ROOT/.cache/example-base.log" 2>&1 &
  base_pid=$!
fi
# Only the CLI: the configuration is scripts/test.sh's, which builds the rest.
if [[ -z $PI ]]; then
  "$ROOT/scripts/build.sh" "$ROOT/build" -- paddle-image
  PI=$ROOT/build/cli/paddle-image
fi
cd "$ROOT/examples/ocr-train"
"$PI" build spec.yaml --cache-dir "$ROOT/.cache/layers" \
  --output oci:out/ocr-train --metadata-file out/metadata.json
"$PI" inspect oci:out/ocr-train:v1

not_run() { # WHY: the scratch image stands; the running one cannot be made here
  echo "example: out/ocr-train is built on scratch, which has no python3, so it does not run;" \
    "the image that runs needs a Debian base, and $1" >&2
  exit 0
}
[[ -n $base_pid ]] || not_run "debootstrap needs root: run scripts/example.sh as root (or with sudo)"
echo "== a Debian 12 base with python3 (debootstrap, cached in $BASE)"
base_rc=0
wait "$base_pid" || base_rc=$?
cat "$ROOT/.cache/example-base.log" >&2
[[ $base_rc -eq 0 ]] ||
  not_run "debootstrap could not make it (see above: Debian's mirror; MIRROR=URL names another)"
cat >"$BASE/base.yaml" <<YAML
# Made by scripts/example.sh: the debootstrap rootfs as a one-layer base image.
base: scratch
layers:
  - name: rootfs
    files:
      - from: rootfs/
        to: /
        allow_absolute_symlinks: true
config:
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
  cmd: [/bin/sh]
YAML
"$PI" build "$BASE/base.yaml" --cache-dir "$ROOT/.cache/layers" --output oci:"$BASE/oci:bookworm" -q
echo "== the example on it: spec-debian.yaml"
"$PI" build spec-debian.yaml --cache-dir "$ROOT/.cache/layers" --output oci:out/ocr-train-debian
echo "== run with runc (umoci unpack, then runc run)"
rm -rf out/bundle
umoci unpack --image out/ocr-train-debian:v1-debian out/bundle >/dev/null
# The image's process as it is, without a terminal (umoci's config asks for one; its
# namespaces already give the process a network of its own).
python3 - out/bundle/config.json <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"].pop("consoleSize", None)
json.dump(c, open(p, "w"), indent=2)
PY
id="paddle-image-example-$$"
runc run --bundle out/bundle "$id" </dev/null
runc delete --force "$id" 2>/dev/null || true
rm -rf out/bundle
