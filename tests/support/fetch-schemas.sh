#!/usr/bin/env bash
# Fetch (once, cached) the official CycloneDX 1.5 JSON schema for the SBOM tests. It
# ships in npm's @cyclonedx/cyclonedx-library; the tarball comes straight from the
# npm registry with curl (no npm needed) and is checked against a pinned sha256.
# SPDX 2.3, in-toto and SLSA publish no schema reachable offline: the tests check the
# required fields those specs list (tests/support/cosign_check.py, `schema`).
# Usage: fetch-schemas.sh OUTDIR   -> OUTDIR/bom-1.5.SNAPSHOT.schema.json (+ the spdx and
# jsf schemas it refers to, under the names it refers to them by)
set -euo pipefail
out=$1
[[ -f "$out/.done" ]] && { echo "fetch-schemas: cached at $out" >&2; exit 0; }
url=https://registry.npmjs.org/@cyclonedx/cyclonedx-library/-/cyclonedx-library-10.3.0.tgz
sha=9833bd949052eb18218dd64b13ad62d9246f7395eef01c66dad08fcbacf74f01
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL --retry 3 --max-time 120 -o "$tmp/lib.tgz" "$url"
echo "$sha  $tmp/lib.tgz" | sha256sum -c --quiet
tar -xzf "$tmp/lib.tgz" -C "$tmp" package/res/schema
mkdir -p "$out"
for f in bom-1.5 spdx jsf-0.82; do
  cp "$tmp/package/res/schema/$f.SNAPSHOT.schema.json" "$out/"
done
touch "$out/.done"
echo "fetch-schemas: CycloneDX 1.5 schema in $out" >&2
