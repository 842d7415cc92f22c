#!/usr/bin/env bash
# Signing, attestations and SBOMs (issue 11), checked by an independent verifier
# written from the formats (tests/support/cosign_check.py: Python cryptography,
# PyNaCl, hashlib.scrypt, jsonschema), against a real registry and in layouts:
# keys both ways, sign/attest/verify round trips, build --sign --push, signatures
# travelling with push/copy/pull and merging, and every tamper case rejected with the
# verification exit code (11).
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
[[ -d "$BASE_ROOTFS" ]] || { echo "missing fixture $BASE_ROOTFS (run scripts/test.sh)"; exit 1; }
registry_start open open "$WORK/reg"
R=$OPEN_HOST
CC=(python3 "$SUPPORT/cosign_check.py")
js() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2" "$1"; }
PASSPHRASE="correct horse $RANDOM battery"
export COSIGN_PASSWORD=$PASSPHRASE

# --- keys -------------------------------------------------------------------------
check "key generate writes cosign.key and cosign.pub" "$PI" key generate -o k1
check "... the private key is mode 0600" bash -c '[[ $(stat -c %a k1.key) == 600 ]]'
check "... PEM type ENCRYPTED COSIGN PRIVATE KEY" grep -q "BEGIN ENCRYPTED COSIGN PRIVATE KEY" k1.key
check "... the independent verifier decrypts it to the same public key" bash -c "'${CC[0]}' '${CC[1]}' decrypt --key k1.key >k1.check.pub && cmp k1.check.pub k1.pub"
cp k1.key k1.key.orig
expect_fail "an existing key is not overwritten" 2 "exists; not overwriting" "$PI" key generate -o k1
check "... and is unchanged" cmp k1.key k1.key.orig
check "--force replaces it" "$PI" key generate -o k1 --force
check "... with a new key" bash -c "! cmp -s k1.key k1.key.orig"
: >empty.pass
expect_fail "an empty passphrase from a file needs --allow-empty-passphrase" 2 "allow-empty-passphrase" \
  env -u COSIGN_PASSWORD "$PI" key generate -o k0 --passphrase-file empty.pass
check "... and works with it" env -u COSIGN_PASSWORD "$PI" key generate -o k0 --passphrase-file empty.pass --allow-empty-passphrase
check "COSIGN_PASSWORD set but empty is an explicit empty passphrase" env COSIGN_PASSWORD= "$PI" key generate -o kempty
expect_fail "no passphrase source and no terminal is a usage error" 2 "COSIGN_PASSWORD" \
  bash -c "env -u COSIGN_PASSWORD '$PI' key generate -o knone </dev/null"
check "... and left no key file" test ! -e knone.key
check "key generate --json" bash -c "'$PI' key generate -o k2 --json >k2.json && grep -q fingerprint k2.json"
check "no output or key file shows the passphrase" bash -c "! grep -rqF '$PASSPHRASE' k1.key k1.pub k2.json"

# --- an image to sign ---------------------------------------------------------------
make_project proj
check "build the project into a layout" "$PI" build proj/spec.yaml -q -o oci:lay
D=$(manifest_digest lay v1)
check "sign oci:lay:v1" bash -c "'$PI' sign oci:lay:v1 --key k1.key --json >sign.json"
check "... identity is the image name and tag" js sign.json 'assert j["identity"]=="example.com/team/app:v1", j'
check "... tagged in index.json as cosign's layout does" grep -q "${D/:/-}.sig" lay/index.json
check "the independent verifier accepts the signature" "${CC[@]}" verify --key k1.pub --layout lay --tag v1 --identity example.com/team/app:v1
check "paddle-image verify accepts it" "$PI" verify oci:lay:v1 --key k1.pub
check "signing again with the same key adds nothing" bash -c "'$PI' sign oci:lay:v1 --key k1.key --json >sign2.json"
check "... reported as not added" js sign2.json 'assert j["signature"]["added"] is False, j'
check "another key appends a second signature" "$PI" sign oci:lay:v1 --key k2.key
sigman() { # LAYOUT TAG -> the .sig manifest file
  local d; d=$(manifest_digest "$1" "$2")
  local s; s=$(manifest_digest "$1" "${d/:/-}.sig")
  echo "$1/blobs/sha256/${s#sha256:}"
}
check "... the .sig manifest has two layers" js "$(sigman lay v1)" 'assert len(j["layers"])==2, j'
check "... each key verifies" bash -c "'$PI' verify oci:lay:v1 --key k1.pub -q 2>/dev/null >/dev/null || '$PI' verify oci:lay:v1 --key k1.pub && '$PI' verify oci:lay:v1 --key k2.pub"
check "... the independent verifier accepts both keys" bash -c "'${CC[0]}' '${CC[1]}' verify --key k1.pub --layout lay --tag v1 && '${CC[0]}' '${CC[1]}' verify --key k2.pub --layout lay --tag v1"

# Keys made by the independent code: every PEM type and scrypt cost cosign has written.
for variant in "cosign 32768" "sigstore 65536" "cosign 131072"; do
  set -- $variant
  check "our sign reads an independently made $1 key (N=$2)" bash -c \
    "'${CC[0]}' '${CC[1]}' genkey --out ind-$2 --pem-type $1 --scrypt-n $2 && '$PI' sign oci:lay:v1 --key ind-$2.key && '$PI' verify oci:lay:v1 --key ind-$2.pub"
done
openssl ecparam -name prime256v1 -genkey -noout -out sec1.pem 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in sec1.pem -out pkcs8.pem
openssl ec -in sec1.pem -pubout -out plain.pub 2>/dev/null
check "a SEC1 EC PEM key signs" "$PI" sign oci:lay:v1 --key sec1.pem
openssl ecparam -name prime256v1 -genkey -out params-first.pem 2>/dev/null
check "... also after an EC PARAMETERS block (openssl ecparam -genkey)" "$PI" sign oci:lay:v1 --key params-first.pem
openssl ec -in sec1.pem -aes256 -passout pass:legacy -out legacy.pem 2>/dev/null
check "a legacy encrypted SEC1 key (Proc-Type header) reads with its passphrase" env COSIGN_PASSWORD=legacy "$PI" sign oci:lay:v1 --key legacy.pem
expect_fail "... and a wrong one says so" 3 "wrong passphrase" env COSIGN_PASSWORD=nope "$PI" sign oci:lay:v1 --key legacy.pem
expect_fail "an encrypted key with no passphrase source is a usage error, not a bad key" 2 "COSIGN_PASSWORD" \
  bash -c "env -u COSIGN_PASSWORD '$PI' sign oci:lay:v1 --key legacy.pem </dev/null"
check "a PKCS#8 PEM key signs, verified independently" bash -c "'$PI' sign oci:lay:v1 --key pkcs8.pem && '${CC[0]}' '${CC[1]}' verify --key plain.pub --layout lay --tag v1"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa.pem 2>/dev/null
openssl genpkey -algorithm ed25519 -out ed.pem 2>/dev/null
expect_fail "an RSA key is refused (exit 3)" 3 "RSA key" "$PI" sign oci:lay:v1 --key rsa.pem
expect_fail "an Ed25519 key is refused (exit 3)" 3 "Ed25519" "$PI" sign oci:lay:v1 --key ed.pem
expect_fail "a wrong passphrase says so (exit 3)" 3 "wrong passphrase or damaged key" \
  env COSIGN_PASSWORD=nope "$PI" sign oci:lay:v1 --key k1.key
head -c 300 k1.key >trunc.key
expect_fail "a truncated key file says so (exit 3)" 3 "truncated" "$PI" sign oci:lay:v1 --key trunc.key
python3 - <<'PY'
import base64, json
t = open("k1.key").read().splitlines()
body = json.loads(base64.b64decode("".join(t[1:-1])))
ct = bytearray(base64.b64decode(body["ciphertext"])); ct[10] ^= 1
body["ciphertext"] = base64.b64encode(bytes(ct)).decode()
b = base64.b64encode(json.dumps(body).encode()).decode()
open("tampered.key", "w").write(t[0] + "\n" + "\n".join(b[i:i+64] for i in range(0, len(b), 64)) + "\n" + t[-1] + "\n")
PY
expect_fail "a tampered key file is refused (exit 3)" 3 "wrong passphrase or damaged key" "$PI" sign oci:lay:v1 --key tampered.key
check "no error message shows the passphrase" bash -c "! grep -qF '$PASSPHRASE' '$WORK/err.txt'"
expect_fail "a docker-archive cannot be signed" 2 "docker-archive cannot carry" "$PI" sign docker-archive:x.tar --key k1.key
printf 'image: {tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >proj/untitled.yaml
printf 'image: {name: ocr, tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >proj/bare.yaml
check "an image titled with a bare name builds" "$PI" build proj/bare.yaml -q -o oci:bare-name
expect_fail "... and signing it needs --identity (not docker.io/library/ocr)" 2 "--identity" "$PI" sign oci:bare-name:v1 --key k1.key
check "an image without a title builds" "$PI" build proj/untitled.yaml -q -o oci:untitled
expect_fail "... and signing it needs --identity" 2 "--identity" "$PI" sign oci:untitled:v1 --key k1.key
check "... which it takes" "$PI" sign oci:untitled:v1 --key k1.key --identity "$R/team/untitled:v1"

# --- build --sign --push: signature, provenance and SBOM in one go ------------------
cat >base.yaml <<YAML
image: {name: example.com/test/debian, tags: [bookworm]}
layers:
  - name: rootfs
    files:
      - from: $BASE_ROOTFS
        to: /
        allow_absolute_symlinks: true
        allow_outside: true
YAML
check "the debootstrap base builds" "$PI" build base.yaml -q -o oci:base
sed -i 's|^base: scratch|base: oci:../base:bookworm|' proj/spec.yaml
check "build --sign -o oci: --push" bash -c "'$PI' build proj/spec.yaml -q --sign --key k1.key -o oci:signed --push $R/team/app:v1 --insecure --json >build.json"
BD=$(js build.json 'print(j["digest"])')
check "... two outputs signed, three documents each" js build.json 'assert len(j["signatures"])==2 and all(len(s["attestations"])==2 for s in j["signatures"]), j["signatures"]'
check "the independent verifier accepts the pushed image, its provenance and SBOM" \
  "${CC[@]}" verify --key k1.pub --registry "http://$R" --repo team/app --ref v1 --identity "$R/team/app:v1" --attestations slsa,spdx
check "... and the layout output" "${CC[@]}" verify --key k1.pub --layout signed --tag v1 --identity example.com/team/app:v1 --attestations slsa,spdx
check "paddle-image verify the registry image (signature + provenance + SBOM)" bash -c "'$PI' verify $R/team/app:v1 --key k1.pub --insecure --attestations slsa,spdx --json >verify.json"
check "... the report names both attestations as verified" js verify.json 'assert j["verified"] and sorted(a["predicate_type"] for a in j["attestations"] if a["verified"])==["https://slsa.dev/provenance/v1","https://spdx.dev/Document"], j'
# Registry failures while verifying keep their codes (5-8), never "verification failed" (11).
proxy_start vproxy "$R" "$WORK/vproxy"
VP=$VPROXY_HOST
proxy_rules vproxy '{"method": "GET", "path": "^/v2/team/app/blobs/", "action": "status", "code": 404, "times": -1}'
expect_fail "verify: signature blobs the registry lost are a registry error (exit 7), not exit 11" 7 "" \
  "$PI" verify "$VP/team/app:v1" --key k1.pub --insecure-registry "$VP" --identity "$R/team/app" --retries 1
proxy_rules vproxy '{"method": "GET", "path": "^/v2/team/app/blobs/", "action": "status", "code": 503, "times": -1}'
expect_fail "verify: a 503 after every retry is not exit 11 either" 7 "" \
  "$PI" verify "$VP/team/app:v1" --key k1.pub --insecure-registry "$VP" --identity "$R/team/app" --retries 1
proxy_rules vproxy ''
check "verify: through the proxy with no fault it passes" "$PI" verify "$VP/team/app:v1" --key k1.pub --insecure-registry "$VP" --identity "$R/team/app"
# The predicates, taken out of the envelopes for the schema checks.
cat >predicates.py <<'PY'
import base64, json, sys
lay, d, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
idx = json.load(open(lay + "/index.json"))
att = [m for m in idx["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == d.replace(":", "-") + ".att"][0]
man = json.load(open(lay + "/blobs/sha256/" + att["digest"][7:]))
for l in man["layers"]:
    env = json.load(open(lay + "/blobs/sha256/" + l["digest"][7:]))
    st = json.loads(base64.b64decode(env["payload"]))
    kind = {"https://slsa.dev/provenance/v1": "slsa", "https://spdx.dev/Document": "spdx", "https://cyclonedx.org/bom": "cyclonedx"}[st["predicateType"]]
    json.dump(st, open(prefix + "statement-" + kind + ".json", "w"))
    json.dump(st["predicate"], open(prefix + kind + ".json", "w"))
PY
python3 predicates.py signed "$BD" ""
check "the SLSA provenance meets the SLSA v1 schema" "${CC[@]}" schema --kind slsa slsa.json
check "the in-toto statement meets the Statement v1 schema" "${CC[@]}" schema --kind intoto statement-slsa.json
check "the SPDX SBOM meets the SPDX 2.3 schema" "${CC[@]}" schema --kind spdx spdx.json
check "provenance: the base by digest" js slsa.json 'd=[x for x in j["buildDefinition"]["resolvedDependencies"] if x.get("annotations",{}).get("role")=="base"]; assert d and d[0]["digest"]["sha256"], d'
nwheels=$(ls proj/wheels/*.whl | wc -l)
check "provenance: every wheel by sha256 ($nwheels)" js slsa.json 'w=[x for x in j["buildDefinition"]["resolvedDependencies"] if x.get("annotations",{}).get("role")=="wheel"]; assert len(w)=='"$nwheels"' and all(len(x["digest"]["sha256"])==64 for x in w), w'
check "provenance: the spec file's digest" bash -c "grep -q \$(sha256sum proj/spec.yaml | cut -d' ' -f1) slsa.json"
check "provenance: the data and files layers' input digests" js slsa.json 'r=[x["annotations"]["role"] for x in j["buildDefinition"]["resolvedDependencies"]]; assert "data layer" in r and "files layer" in r, r'
check "provenance: builder, invocation and times" js slsa.json 'm=j["runDetails"]["metadata"]; assert j["runDetails"]["builder"]["id"] and m["invocationId"] and m["startedOn"].endswith("Z") and m["finishedOn"].endswith("Z"), j'
check "provenance: the resolved compatibility facts (the image's io.paddle-image labels)" js slsa.json 'c=j["buildDefinition"]["internalParameters"]["compatibility"]; assert c.get("io.paddle-image.python.version")=="3.11", c'
check "provenance: no host paths, no secrets" bash -c "! grep -qE '$WORK|$PASSPHRASE' slsa.json"
check "SBOM: the base's real dpkg packages" js spdx.json 'p={x["name"] for x in j["packages"]}; assert {"libc6","python3","dpkg","bash"} <= p, sorted(p)[:20]'
check "SBOM: deb purls name the distro" js spdx.json 'r=[e["referenceLocator"] for x in j["packages"] for e in x.get("externalRefs",[]) if "libc6" in e["referenceLocator"]]; assert r and r[0].startswith("pkg:deb/debian/libc6@") and "distro=debian-12" in r[0], r'
check "SBOM: the wheels as pypi packages" js spdx.json 'r=[e["referenceLocator"] for x in j["packages"] for e in x.get("externalRefs",[])]; assert any(x.startswith("pkg:pypi/purepkg@") for x in r), r'
check "SBOM: the data layer as one component with its digest" js spdx.json 'm=[x for x in j["packages"] if x["name"]=="models"]; assert m and m[0]["checksums"][0]["checksumValue"], m'
dpkg_count=$(grep -c '^Status: install ok installed' "$BASE_ROOTFS/var/lib/dpkg/status")
check "SBOM: exactly the base's $dpkg_count installed dpkg packages" js spdx.json "assert len([x for x in j['packages'] if 'pkg:deb/' in json.dumps(x)])==$dpkg_count"
# The official CycloneDX 1.5 schema when scripts/test.sh could fetch it (npm registry),
# else the required fields the spec lists (cosign_check.py's own schema).
CDX_SCHEMA=$FIXTURES/schemas/bom-1.5.SNAPSHOT.schema.json
if [[ -f "$CDX_SCHEMA" ]]; then
  cdx_check=(--schema-file "$CDX_SCHEMA"); cdx_what="the official CycloneDX 1.5 schema"
else
  cdx_check=(); cdx_what="the CycloneDX 1.5 required fields (official schema not fetched)"
fi
check "sbom --format cyclonedx meets $cdx_what" bash -c "'$PI' sbom oci:signed:v1 --format cyclonedx -o cdx.json && '${CC[0]}' '${CC[1]}' schema --kind cyclonedx ${cdx_check[*]} cdx.json"
check "... and so does the build's CycloneDX attestation" bash -c "'$PI' build proj/spec.yaml -q --sign --key k1.key -o oci:cdx --sbom-format cyclonedx && python3 predicates.py cdx \$(python3 -c 'import json; print([m[\"digest\"] for m in json.load(open(\"cdx/index.json\"))[\"manifests\"] if m.get(\"annotations\",{}).get(\"org.opencontainers.image.ref.name\")==\"v1\"][0])') cdx- && '${CC[0]}' '${CC[1]}' schema --kind cyclonedx ${cdx_check[*]} cdx-cyclonedx.json"
check "sbom is reproducible (same image, same document)" bash -c "'$PI' sbom oci:signed:v1 >a.json && '$PI' sbom oci:signed:v1 >b.json && cmp a.json b.json"
check "... and equals the attested SPDX document" bash -c "python3 -c 'import json,sys; assert json.load(open(\"a.json\"))==json.load(open(\"spdx.json\"))'"
# A push-only build --sign attests the SBOM under the pushed repository, so `sbom REF`
# of that push equals the attested document (before, it named the spec's image.name).
check "push-only build --sign" bash -c "'$PI' build proj/spec.yaml -q --sign --key k1.key --push $R/team/ponly:v1 --insecure --digest-file ponly.digest"
check "... pulled back with its attachments" "$PI" pull "$R/team/ponly:v1" -o oci:ponly --insecure -q
python3 predicates.py ponly "$(cat ponly.digest)" ponly-
check "... sbom REF equals the attested SPDX document" bash -c "'$PI' sbom $R/team/ponly:v1 --insecure >ponly-sbom.json && python3 -c 'import json; a=json.load(open(\"ponly-sbom.json\")); b=json.load(open(\"ponly-spdx.json\")); assert a==b, (a[\"name\"], b[\"name\"])'"
check "signing and verifying by digest name the digest once" bash -c \
  "'$PI' sign $R/team/ponly@\$(cat ponly.digest) --key k1.key --insecure >bydigest.txt 2>&1 &&
   '$PI' verify $R/team/ponly@\$(cat ponly.digest) --key k1.pub --insecure >>bydigest.txt 2>&1 &&
   grep -q '@sha256:' bydigest.txt && ! grep -q '@sha256:[0-9a-f]*@sha256:' bydigest.txt"
check "build --sign --sbom-base skip" "$PI" build proj/spec.yaml -q --sign --key k1.key -o oci:skipped --sbom-base skip
SD=$(manifest_digest skipped v1)
check "... its SBOM lists the wheels but none of the base's dpkg packages" bash -c \
  "python3 predicates.py skipped $SD skip- && grep -q pkg:pypi/purepkg skip-spdx.json && ! grep -q pkg:deb/ skip-spdx.json"
check "the SBOM of a build reads the base's file tree from the build's cache, only its own layers from the image" bash -c \
  "PADDLE_IMAGE_CACHE=\$PWD/viewcache '$PI' build proj/spec.yaml --sign --key k1.key -o oci:viewed >viewed.log 2>&1 &&
   grep -q 'reading the file tree of example.com/team/app (the top 3 of 4 layers; the 1 below them from the cache)' viewed.log ||
   { cat viewed.log; exit 1; }"
check "sbom caches the image's file tree: a second run reads no layer, and says the same" bash -c \
  "export PADDLE_IMAGE_CACHE=\$PWD/viewcache
   '$PI' sbom oci:viewed:v1 >sb1.json 2>sb1.err && grep -q 'the top 3 of 4 layers' sb1.err &&
   '$PI' sbom oci:viewed:v1 >sb2.json 2>sb2.err && ! grep -q 'reading the file tree' sb2.err && cmp sb1.json sb2.json &&
   grep -q pkg:deb/debian/libc6 sb1.json && grep -q pkg:pypi/purepkg sb1.json"
check "cache prune --all removes the cached file trees" bash -c \
  "ls viewcache/base-view | grep -c zst | grep -qx 2 &&
   '$PI' cache prune --all --cache-dir viewcache --json | python3 -c 'import json,sys; assert json.load(sys.stdin)[\"views_removed\"] == 2' &&
   [ -z \"\$(ls viewcache/base-view)\" ]"
expect_fail "--sign with only a docker-archive output is a usage error" 2 "docker-archive cannot carry" \
  "$PI" build proj/spec.yaml -q --sign --key k1.key -o docker-archive:only.tar
expect_fail "--sign without --key" 2 "needs --key" "$PI" build proj/spec.yaml -q --sign -o oci:x

# --- signatures travel, and merge ---------------------------------------------------
check "push of a signed layout carries .sig and .att" "$PI" push oci:lay:v1 "$R/team/lay:v1" --insecure -q
check "... verified independently in the registry" "${CC[@]}" verify --key k2.pub --registry "http://$R" --repo team/lay --ref v1
check "a signature added in the registry (k0: empty passphrase)" env COSIGN_PASSWORD= "$PI" sign "$R/team/lay:v1" --key k0.key --insecure
check "pull brings every signature back" bash -c "COSIGN_PASSWORD= '$PI' pull $R/team/lay:v1 -o oci:pulled --insecure -q && '$PI' verify oci:pulled:v1 --key k0.pub --identity $R/team/lay:v1 && '$PI' verify oci:pulled:v1 --key k1.pub"
n_before=$(js "$(sigman lay v1)" 'print(len(j["layers"]))')
check "pushing the layout again merges with the registry's signatures (union)" "$PI" push oci:lay:v1 "$R/team/lay:v1" --insecure -q
check "... the registry keeps the k0 signature and has every layout one" bash -c \
  "skopeo inspect --raw --tls-verify=false docker://$R/team/lay:${D/:/-}.sig | python3 -c 'import json,sys; assert len(json.load(sys.stdin)[\"layers\"])==$n_before+1'"
check "tags hides the signature tags" bash -c "'$PI' tags $R/team/lay --insecure | grep -q '^v1$' && ! '$PI' tags $R/team/lay --insecure | grep -q '.sig$'"
check "... and tags --all lists them" bash -c "'$PI' tags $R/team/lay --insecure --all | grep -q '${D/:/-}.sig$'"
check "copy to another layout keeps them" bash -c "'$PI' copy oci:lay:v1 oci:copied:v1 -q && '$PI' verify oci:copied:v1 --key k2.pub"
check "--no-signatures leaves them behind" bash -c "'$PI' copy oci:lay:v1 oci:bare:v1 -q --no-signatures"
expect_fail "... and verify then fails with exit 11" 11 "no signatures for $D" "$PI" verify oci:bare:v1 --key k1.pub

# --- tampering: each is refused with exit 11 ----------------------------------------
tamper() { # NAME MODE: copy the signed layout to NAME and apply MODE (tests/support python below)
  rm -rf "$1" && cp -a signed "$1"
  CC="$SUPPORT/cosign_check.py" python3 "$WORK/tamper.py" "$1" "$BD" "${@:2}"
}
cat >tamper.py <<'PY'
import base64, hashlib, json, os, subprocess, sys
CC = os.environ["CC"]
lay, digest, mode = sys.argv[1], sys.argv[2], sys.argv[3]
def path(d): return lay + "/blobs/sha256/" + d.split(":")[1]
def put(b):
    d = "sha256:" + hashlib.sha256(b).hexdigest(); open(path(d), "wb").write(b); return d, len(b)
idx = json.load(open(lay + "/index.json"))
def entry(tag): return [m for m in idx["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag][0]
def save(): json.dump(idx, open(lay + "/index.json", "w"))
def rewrite_layer(suffix, fn):
    e = entry(digest.replace(":", "-") + suffix)
    man = json.load(open(path(e["digest"])))
    l = man["layers"][0]
    new, l["annotations"] = fn(open(path(l["digest"]), "rb").read(), l.get("annotations", {}))
    l["digest"], l["size"] = put(new)
    e["digest"], e["size"] = put(json.dumps(man).encode())
    save()
def sign(data):  # with the independent signer, so only the tampered field is wrong
    open(lay + ".tosign", "wb").write(data)
    return subprocess.check_output([sys.executable, CC, "sign-blob", "--key", "k1.key", "--in", lay + ".tosign"]).decode().strip()
if mode == "manifest":   # the image manifest changed: its digest is no longer the signed one
    e = entry("v1"); man = json.load(open(path(e["digest"])))
    man.setdefault("annotations", {})["tampered"] = "1"
    e["digest"], e["size"] = put(json.dumps(man).encode()); save()
elif mode == "payload":  # another payload under the old signature
    rewrite_layer(".sig", lambda b, a: (b.replace(b'"optional":null', b'"optional":{"x":"y"}'), a))
elif mode == "other-digest":  # a valid signature, of another image's digest
    other, src_lay = sys.argv[4], sys.argv[5]
    src = json.load(open(src_lay + "/index.json"))
    sig = [m for m in src["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == other.replace(":", "-") + ".sig"][0]
    import shutil
    for f in os.listdir(src_lay + "/blobs/sha256"):
        if not os.path.exists(lay + "/blobs/sha256/" + f): shutil.copy(src_lay + "/blobs/sha256/" + f, lay + "/blobs/sha256/" + f)
    e = entry(digest.replace(":", "-") + ".sig"); e["digest"], e["size"] = sig["digest"], sig["size"]; save()
elif mode in ("subject", "reorder", "truncate"):
    def fn(b, a):
        env = json.loads(b)
        st = json.loads(base64.b64decode(env["payload"]))
        if mode == "subject":
            st["subject"][0]["digest"]["sha256"] = "0" * 64
            body = json.dumps(st).encode()
            pae = b"DSSEv1 %d %s %d %s" % (len(env["payloadType"]), env["payloadType"].encode(), len(body), body)
            env["payload"] = base64.b64encode(body).decode()
            env["signatures"][0]["sig"] = sign(pae)   # signed with the right key: only the subject is wrong
            return json.dumps(env).encode(), a
        if mode == "reorder":
            body = json.dumps(dict(reversed(list(st.items())))).encode()
            env["payload"] = base64.b64encode(body).decode()
            return json.dumps(env).encode(), a
        return b[: len(b) // 2], a
    rewrite_layer(".att", fn)
PY
check "the untampered copy verifies" bash -c "rm -rf t0 && cp -a signed t0 && '$PI' verify oci:t0:v1 --key k1.pub --attestations slsa,spdx"
tamper t-man manifest
expect_fail "a changed manifest" 11 "no signatures for sha256:" "$PI" verify oci:t-man:v1 --key k1.pub
tamper t-pay payload
expect_fail "a swapped payload" 11 "does not verify with this key" "$PI" verify oci:t-pay:v1 --key k1.pub
check "... the independent verifier agrees" bash -c "! '${CC[0]}' '${CC[1]}' verify --key k1.pub --layout t-pay --tag v1"
expect_fail "the wrong key" 11 "does not verify with this key" "$PI" verify oci:signed:v1 --key k2.pub
tamper t-dig other-digest "$D" lay
expect_fail "a signature for another digest" 11 "signs $D, not $BD" "$PI" verify oci:t-dig:v1 --key k1.pub
tamper t-sub subject
expect_fail "an attestation with another subject" 11 "subject is not $BD" "$PI" verify oci:t-sub:v1 --key k1.pub --attestations slsa
check "... the independent verifier agrees" bash -c "! '${CC[0]}' '${CC[1]}' verify --key k1.pub --layout t-sub --tag v1 --attestations slsa"
tamper t-ord reorder
expect_fail "a re-ordered DSSE payload" 11 "no envelope signature verifies" "$PI" verify oci:t-ord:v1 --key k1.pub --attestations slsa
tamper t-tru truncate
expect_fail "a truncated DSSE envelope" 11 "truncated" "$PI" verify oci:t-tru:v1 --key k1.pub --attestations slsa
expect_fail "... even when only the signature is asked for (attestations present are checked)" 11 "attestation" "$PI" verify oci:t-tru:v1 --key k1.pub
rm -rf t-ref && cp -a lay t-ref && python3 - <<'PY'
import json
idx = json.load(open("t-ref/index.json"))
idx["manifests"] = [m for m in idx["manifests"] if not m.get("annotations", {}).get("org.opencontainers.image.ref.name", "").endswith(".sig")]
json.dump(idx, open("t-ref/index.json", "w"))
PY
check "(a layout whose only signature names another repository)" "$PI" sign oci:t-ref:v1 --key k1.key --identity other.example/evil/app:v1
expect_fail "a docker-reference for another repository" 11 "docker-reference is 'other.example/evil/app:v1'" \
  "$PI" verify oci:t-ref:v1 --key k1.pub
check "verify --json reports the failure with exit 11" bash -c \
  "'$PI' verify oci:t-ref:v1 --key k1.pub --json >vj.json; [[ \$? -eq 11 ]] && grep -q '\"exit_code\": 11' vj.json"

# --- sign-blob / verify-blob: cosign's blob form (base64 DER ECDSA over the file's
# SHA-256), checked both ways against the independent verifier.
head -c $((24 << 20)) /dev/urandom >blob.tar.gz
check "sign-blob writes a base64 signature of a 24 MiB file" "$PI" sign-blob blob.tar.gz --key k1.key --output-signature blob.sig
check "... that the independent verifier accepts" "${CC[@]}" verify-blob --key k1.pub --signature blob.sig --in blob.tar.gz
check "verify-blob accepts it" bash -c "'$PI' verify-blob blob.tar.gz --key k1.pub --signature blob.sig | grep -qx 'Verified OK'"
check "sign-blob without --output-signature prints it (as cosign does)" bash -c \
  "'$PI' sign-blob blob.tar.gz --key k1.key 2>/dev/null | head -c 4096 >printed.sig && '${CC[0]}' '${CC[1]}' verify-blob --key k1.pub --signature printed.sig --in blob.tar.gz"
check "a signature from the independent signer verifies" bash -c \
  "'${CC[0]}' '${CC[1]}' sign-blob --key k1.key --in blob.tar.gz >theirs.sig && '$PI' verify-blob blob.tar.gz --key k1.pub --signature theirs.sig"
check "sign-blob --json names the file's sha256 and the key" bash -c \
  "'$PI' sign-blob blob.tar.gz --key k1.key --json >sb.json && python3 -c \"import json,hashlib,sys; j=json.load(open('sb.json')); sys.exit(j['sha256'] != hashlib.sha256(open('blob.tar.gz','rb').read()).hexdigest() or not j['key'].startswith('sha256:'))\""
cp blob.tar.gz blob2.tar.gz && printf 'x' | dd of=blob2.tar.gz bs=1 seek=1000 conv=notrunc status=none
expect_fail "verify-blob refuses a changed file (exit 11)" 11 "does not verify blob2.tar.gz" \
  "$PI" verify-blob blob2.tar.gz --key k1.pub --signature blob.sig
check "... as the independent verifier does" bash -c "! '${CC[0]}' '${CC[1]}' verify-blob --key k1.pub --signature blob.sig --in blob2.tar.gz 2>/dev/null"
expect_fail "verify-blob refuses another key's signature (exit 11)" 11 "another key signed it" \
  "$PI" verify-blob blob.tar.gz --key k2.pub --signature blob.sig
printf 'not base64!' >bad.sig
expect_fail "a signature file that is not base64 (exit 11)" 11 "does not hold a base64 signature" \
  "$PI" verify-blob blob.tar.gz --key k1.pub --signature bad.sig
expect_fail "a missing signature file is a usage error (exit 2)" 2 "no such file" \
  "$PI" verify-blob blob.tar.gz --key k1.pub --signature nothing.sig
expect_fail "a missing file to sign is an input error (exit 3)" 3 "no such file" \
  "$PI" sign-blob nothing.tar.gz --key k1.key
check "verify-blob --json reports a failure with exit 11" bash -c \
  "'$PI' verify-blob blob2.tar.gz --key k1.pub --signature blob.sig --json >vb.json; [[ \$? -eq 11 ]] && grep -q '\"verified\": false' vb.json"
finish
