#!/usr/bin/env bash
# Quick start, part 1: install dependencies, build paddle-image, and build the bundled
# example image (examples/ocr-train) into examples/ocr-train/out as an OCI layout.
# No registry and no network beyond Debian's packages.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/scripts/setup.sh"
# Only the CLI: the configuration is scripts/test.sh's, which builds the rest.
"$ROOT/scripts/build.sh" "$ROOT/build" -- paddle-image
cd "$ROOT/examples/ocr-train"
"$ROOT/build/cli/paddle-image" build spec.yaml --cache-dir "$ROOT/.cache/layers" \
  --output oci:out/ocr-train --metadata-file out/metadata.json
"$ROOT/build/cli/paddle-image" inspect oci:out/ocr-train:v1
