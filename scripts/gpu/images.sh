#!/usr/bin/env bash
# Builds the test images of scripts/gpu/expected.tsv into one OCI layout, tagged by the
# first column: scratch plus one small file, with only the `requires:` each case tests.
# Used by bundle.sh (for a real GPU machine) and tests/integration/doctor.sh (the replay).
#   [EXPECTED=FILE] scripts/gpu/images.sh PADDLE_IMAGE LAYOUT_DIR   (default expected.tsv)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${1:?usage: images.sh PADDLE_IMAGE LAYOUT_DIR}
LAYOUT=${2:?usage: images.sh PADDLE_IMAGE LAYOUT_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "probe" >"$work/probe.txt"
while IFS=$'\t' read -r tag requires _check _expect; do
  [[ -z "$tag" || "$tag" == \#* ]] && continue
  printf 'image:\n  name: example.com/gpu-probe\nbase: scratch\nrequires: %s\nlayers:\n  - name: probe\n    files:\n      - from: probe.txt\n        to: /probe.txt\n' \
    "$requires" >"$work/$tag.yaml"
  "$BIN" build "$work/$tag.yaml" -o "oci:$LAYOUT:$tag" --quiet >/dev/null
done < <(awk -F'\t' '!seen[$1]++' "${EXPECTED:-$HERE/expected.tsv}")
