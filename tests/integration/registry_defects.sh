#!/usr/bin/env bash
# Copy, pull and layout defects of issue 9: docker-archive tags follow the tag
# precedence (and the repository comes from the source, the title or --name); a
# truncated archive says so; a refused directory keeps no lock file; an explicit
# --platform applies to single-platform images; foreign index.json fields survive a
# rewrite; one image under two tags is not ambiguous; `gc` collects unreferenced blobs
# and keeps signatures; a missing tag points at `tags`; progress lines tell the truth.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
registry_start open open "$WORK/reg"
R=$OPEN_HOST
repo_tags() { tar -xOf "$1" manifest.json | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)[0].get("RepoTags") or []))'; }

mkdir -p app/src && echo 'print(1)' >app/src/main.py
head -c 3000000 /dev/urandom >app/src/blob.bin # a few MiB so progress has quarters to show
printf 'image: {name: example.com/team/app, tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >app/spec.yaml
printf 'image: {tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >app/untitled.yaml
check "build a titled and an untitled image" bash -c \
  "'$PI' build app/spec.yaml -q -o oci:lay && '$PI' build app/untitled.yaml -q -o oci:untitled"

# --- 10: tags of a docker-archive destination -----------------------------------
check "copy oci -> docker-archive with -t uses the tag and the image's title" "$PI" copy oci:lay:v1 docker-archive:a.tar -t v9 -q
check "... RepoTags is example.com/team/app:v9" test "$(repo_tags a.tar)" = "example.com/team/app:v9"
check "without -t the source's tag is kept" "$PI" copy oci:lay:v1 docker-archive:b.tar -q
check "... RepoTags is example.com/team/app:v1" test "$(repo_tags b.tar)" = "example.com/team/app:v1"
check "copy docker-archive -> docker-archive keeps the source's RepoTags" "$PI" copy docker-archive:a.tar docker-archive:c.tar -q
check "... example.com/team/app:v9" test "$(repo_tags c.tar)" = "example.com/team/app:v9"
expect_fail "an image with no name anywhere is a usage error asking for --name" 2 "pass --name REPOSITORY" \
  "$PI" copy oci:untitled:v1 docker-archive:d.tar -q
check "... and --name supplies it" "$PI" copy oci:untitled:v1 docker-archive:d.tar --name team/other -t t1 -t t2 -q
check "... RepoTags team/other:t1 team/other:t2" test "$(repo_tags d.tar)" = "team/other:t1 team/other:t2"
check "push, then pull to a docker-archive takes the registry repository" bash -c \
  "'$PI' push oci:lay:v1 $R/team/app:v1 --insecure -q && '$PI' pull $R/team/app:v1 -o docker-archive:e.tar --insecure -q"
check "... RepoTags is HOST/team/app:v1" test "$(repo_tags e.tar)" = "$R/team/app:v1"
check "skopeo reads the archive and its tag" bash -c "skopeo inspect docker-archive:a.tar >/dev/null"

# --- 13: a truncated docker-archive ------------------------------------------------
head -c 2000000 a.tar >trunc.tar
expect_fail "a truncated docker-archive says truncated" 3 "trunc.tar is truncated or corrupt" \
  "$PI" copy docker-archive:trunc.tar oci:fromtrunc -q
expect_fail "a file that is not a tar still says no manifest.json" 3 "no manifest.json" \
  "$PI" copy docker-archive:app/spec.yaml oci:fromyaml -q

# --- 15: nothing left behind in a refused directory --------------------------------
mkdir -p notalayout && echo keep >notalayout/file.txt
expect_fail "an output directory that is not a layout is refused" 3 "not an OCI image layout" \
  "$PI" build app/spec.yaml -q -o oci:notalayout
check "... and keeps no .paddle-image.lock" test ! -e notalayout/.paddle-image.lock
check "... nor anything else new" test "$(ls -A notalayout)" = "file.txt"

# --- 15: --platform on a single-platform image ----------------------------------------
expect_fail "pull --platform linux/arm64 of an amd64-only image is refused like an index" 9 \
  "has no image for linux/arm64 \(it is a single-platform image for linux/amd64\)" \
  "$PI" pull "$R/team/app:v1" --platform linux/arm64 -o oci:arm --insecure -q
check "... nothing was written" test ! -e arm/index.json
check "the matching --platform is fine" "$PI" pull "$R/team/app:v1" --platform linux/amd64 -o oci:amd --insecure -q

# --- 15: unknown fields of index.json survive a rewrite ---------------------------------
python3 - lay <<'PY'
import json, sys
p = sys.argv[1] + "/index.json"
j = json.load(open(p))
j["manifests"][0]["urls"] = ["https://mirror.example/blob"]
j["manifests"][0]["artifactType"] = "application/x-test"
j["x-top-level"] = {"kept": True}
json.dump(j, open(p, "w"))
PY
check "a rewrite of index.json (a new tag) succeeds" "$PI" copy oci:lay:v1 oci:lay:v2 -q
check "... and keeps urls, artifactType and a top-level field" python3 - lay <<'PY'
import json, sys
j = json.load(open(sys.argv[1] + "/index.json"))
v1 = [m for m in j["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "v1"][0]
assert v1["urls"] == ["https://mirror.example/blob"], v1
assert v1["artifactType"] == "application/x-test", v1
assert j["x-top-level"] == {"kept": True}, j
PY

# --- two tags of one manifest are one image -----------------------------------------
check "a layout holding one image under v1 and v2 reads without a tag" bash -c "'$PI' inspect oci:lay --json >inspect.json"
check "... as that image" grep -q "$(manifest_digest lay v1)" inspect.json

# --- gc -----------------------------------------------------------------------------
cp -a lay gclay
echo 'print(2)' >app/src/main.py
check "a second build into the layout under the same tag" "$PI" build app/spec.yaml -q -o oci:gclay:v1 -t v1
"$PI" copy oci:gclay:v1 oci:gclay:v2 -q >/dev/null # v2 now names the new image too; the first image is unreferenced
# A signature-like referrer of the new image, not tagged: kept because its subject is.
python3 - gclay "$(manifest_digest gclay v1)" <<'PY'
import hashlib, json, os, sys
layout, subject = sys.argv[1], sys.argv[2]
def put(data):
    h = hashlib.sha256(data).hexdigest()
    open(os.path.join(layout, "blobs/sha256", h), "wb").write(data)
    return h, len(data)
cfg, cfg_size = put(b"{}")
man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                  "artifactType": "application/vnd.dev.cosign.artifact.sig.v1+json",
                  "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": "sha256:" + cfg, "size": cfg_size},
                  "layers": [], "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                            "digest": subject, "size": 1}}).encode()
h, _ = put(man)
open(os.path.join(layout, "referrer"), "w").write(h)
PY
mv gclay/referrer referrer.txt
before=$(ls gclay/blobs/sha256 | wc -l)
check "gc --dry-run lists the unreferenced blobs" bash -c "'$PI' gc oci:gclay --dry-run --json >dry.json"
check "... and removes nothing" test "$(ls gclay/blobs/sha256 | wc -l)" = "$before"
check "... it names at least the old manifest and layer" python3 -c "import json; j=json.load(open('dry.json')); assert len(j['removed']) >= 2 and j['bytes_unreferenced'] > 0, j"
check "gc removes them" "$PI" gc oci:gclay --json
check "... the layout still passes umoci and skopeo" bash -c \
  "umoci unpack --image gclay:v2 gcb >/dev/null && skopeo inspect oci:gclay:v1 >/dev/null"
check "... every blob the tags reach is there" blobs_intact gclay
check "... the untagged referrer (its subject is kept) stayed" test -e "gclay/blobs/sha256/$(cat referrer.txt)"
check "... and a second gc finds nothing" bash -c "'$PI' gc oci:gclay --json | grep -q '\"removed\": \[\]'"

# --- a missing registry tag points at `tags` ------------------------------------------
expect_fail "a missing tag says how to list the tags" 7 "paddle-image tags $R/team/app" \
  "$PI" pull "$R/team/app:nosuchtag" -o oci:missing --insecure -q

# --- progress lines in CI tell the real percentage -----------------------------------
CI=true "$PI" push oci:lay:v1 "$R/progress/ci:v1" --insecure 2>ci.txt >/dev/null
check "CI progress percentages match the bytes shown" python3 - ci.txt <<'PY'
import re, sys
units = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
n = 0
for line in open(sys.argv[1]):
    m = re.match(r"\s+sha256:[0-9a-f]{12} (\d+)% \(([\d.]+) (\w+) / ([\d.]+) (\w+)\)", line)
    if not m:
        continue
    n += 1
    pct, done, total = int(m[1]), float(m[2]) * units[m[3]], float(m[4]) * units[m[5]]
    assert total > 0 and abs(pct - 100 * done / total) <= 5, line
assert n > 0, "no progress lines"
PY

finish
