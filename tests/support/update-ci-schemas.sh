#!/usr/bin/env bash
# Regenerates tests/support/ci-schemas/github-workflow.json, the pinned GitHub Actions
# workflow schema that tests/support/ci_validate.py checks rendered workflows against.
# The tests never run this (CI machines cannot reach npm): the output is committed. Run it
# by hand to reproduce the committed file (the same bytes) or, after changing the pins
# below, to update it; then commit the result and the new sha256s (here and in the README).
#
# Source: npm @action-validator/core 0.6.0, the engine of @action-validator/cli 0.6.0 (the
# validator the templates issue names). It compiles SchemaStore's github-workflow.json into
# its WebAssembly module with Rust's include_str!, so the file's bytes sit verbatim in the
# module's data section: this script cuts them out (the JSON object whose "$id" is
# https://json.schemastore.org/github-workflow.json, plus its final newline). The result
# is exactly the schema that `npx @action-validator/cli` validates workflows against.
# The tarball is fetched with curl and checked against the sha256 below (the same tarball
# as npm's sha512 `integrity` for that version); the cut-out file against its own sha256.
#
# Usage: tests/support/update-ci-schemas.sh [OUT.json]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/ci-schemas/github-workflow.json}

core_url=https://registry.npmjs.org/@action-validator/core/-/core-0.6.0.tgz
core_sha=a48f55be8d76a1d0e66dd9bbdfdd583c09e2bd5110539f1b4cd9512d442843bd
schema_sha=296f40c098f5ef98fba9c58dea1fef9a76d7b30eac8d46ed94fcdd31c8116b42

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL --retry 3 --max-time 120 -o "$tmp/core.tgz" "$core_url"
echo "$core_sha  $tmp/core.tgz" | sha256sum -c --quiet
tar -xzf "$tmp/core.tgz" -C "$tmp" package/action_validator_bg.wasm

# Cut the JSON text out of the module: from the '{' that opens the object holding the $id
# to the '}' that closes it (a JSON parser finds the end), and the newline after it.
/usr/bin/python3 - "$tmp/package/action_validator_bg.wasm" "$tmp/github-workflow.json" <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read()
marker = b'"$id": "https://json.schemastore.org/github-workflow.json"'
if data.count(marker) != 1:
    sys.exit(f"update-ci-schemas: {marker.decode()} occurs {data.count(marker)} times in the module, not once")
at = data.index(marker)
start = data.rindex(b"\n{\n", 0, at) + 1
text = data[start:start + 400000].decode("utf-8", "replace")
obj, end = json.JSONDecoder().raw_decode(text)
raw = data[start:start + len(text[:end].encode("utf-8"))]
if json.loads(raw) != obj or obj.get("$id") != "https://json.schemastore.org/github-workflow.json":
    sys.exit("update-ci-schemas: the text cut out is not the workflow schema")
if data[start + len(raw):start + len(raw) + 1] == b"\n":
    raw += b"\n"
open(sys.argv[2], "wb").write(raw)
PY
echo "$schema_sha  $tmp/github-workflow.json" | sha256sum -c --quiet || {
  echo "update-ci-schemas: the schema cut out has sha256 $(sha256sum <"$tmp/github-workflow.json" | cut -d' ' -f1)," \
    "not the pinned $schema_sha: a new pin? then update schema_sha here and in ci-schemas/README.md" >&2
  exit 1
}
mkdir -p "$(dirname "$out")"
cp "$tmp/github-workflow.json" "$out"
echo "update-ci-schemas: $out (sha256 $schema_sha, from @action-validator/core 0.6.0)" >&2
