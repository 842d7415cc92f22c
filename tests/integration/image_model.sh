#!/usr/bin/env bash
# The one image model (issue 10): every source (layout, docker-archive read in place,
# registry) to every destination through one writer each; what is attached to an
# image (cosign's .sig/.att tags) travels with it unless --no-signatures; a
# docker-archive is read where it lies, with compressed and linked members too, and a
# corrupt member is an integrity error that stores nothing.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
registry_start open open "$WORK/reg"
R=$OPEN_HOST
export PADDLE_IMAGE_CACHE="$WORK/cache"
js() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2" "$1"; }

mkdir -p app/src && echo 'print(1)' >app/src/main.py && head -c 200000 /dev/urandom >app/src/blob.bin
printf 'image: {name: example.com/team/app, tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >app/spec.yaml
check "build a layout and a docker-archive" "$PI" build app/spec.yaml -q -o oci:lay -o docker-archive:img.tar
subject=$(manifest_digest lay v1)

# A cosign-style signature and attestation, tagged in index.json as cosign's layout does.
python3 - "$subject" <<'PY'
import hashlib, json, sys
subject = sys.argv[1]
def blob(b, mt):
    d = hashlib.sha256(b).hexdigest()
    open("lay/blobs/sha256/" + d, "wb").write(b)
    return {"mediaType": mt, "digest": "sha256:" + d, "size": len(b)}
idx = json.load(open("lay/index.json"))
for suffix, payload in ((".sig", b'{"critical":{}}'), (".att", b'{"payloadType":"x"}')):
    man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
           "config": blob(b"{}", "application/vnd.oci.image.config.v1+json"),
           "layers": [blob(payload, "application/vnd.dev.cosign.simplesigning.v1+json")]}
    m = blob(json.dumps(man).encode(), man["mediaType"])
    m["annotations"] = {"org.opencontainers.image.ref.name": subject.replace(":", "-") + suffix}
    idx["manifests"].append(m)
json.dump(idx, open("lay/index.json", "w"))
PY
sigtag="${subject/:/-}.sig"
check "a layout with attachments still names its one image without a tag" "$PI" inspect oci:lay --json
check "... and umoci still reads the image" umoci stat --image lay:v1

# --- layout -> registry -> layout, attachments along ---------------------------------
check "push carries the signature and attestation" bash -c "'$PI' push oci:lay:v1 $R/team/app:v1 --insecure -q --json >push.json"
check "... the metadata counts 2 attachments" js push.json 'assert j["attachments"]==2, j'
check "... skopeo reads the .sig tag in the registry" skopeo inspect --raw --tls-verify=false "docker://$R/team/app:$sigtag"
check "pull brings them back into a layout" bash -c "'$PI' pull $R/team/app:v1 -o oci:pulled --insecure -q --json >pull.json"
check "... under the same tags" bash -c "grep -q '$sigtag' pulled/index.json && grep -q '${subject/:/-}.att' pulled/index.json"
check "... every blob intact" blobs_intact pulled
check "gc of the pulled layout keeps them" bash -c "'$PI' gc oci:pulled --json | python3 -c 'import json,sys; assert json.load(sys.stdin)[\"removed\"]==[]'"
check "--no-signatures leaves them behind" bash -c "'$PI' copy oci:lay:v1 oci:bare:v1 -q --no-signatures && ! grep -q '$sigtag' bare/index.json"
check "layout to layout copies them by default" bash -c "'$PI' copy oci:lay:v1 oci:copy:v1 -q && grep -q '$sigtag' copy/index.json"
check "... every blob intact" blobs_intact copy

# --- docker-archive read in place ---------------------------------------------------
rm -rf "$PADDLE_IMAGE_CACHE"
check "docker-archive -> registry" "$PI" copy docker-archive:img.tar "$R/team/fromarch:v1" --insecure -q
check "docker-archive -> layout" "$PI" copy docker-archive:img.tar oci:fromarch:v1 -q
check "... nothing was unpacked to scratch space (no cache directory)" test ! -e "$PADDLE_IMAGE_CACHE"
check "... umoci unpacks the layout" bash -c "umoci unpack --rootless --image fromarch:v1 fa >/dev/null && test -f fa/rootfs/app/main.py"
check "inspect reads a docker-archive" bash -c "'$PI' inspect docker-archive:img.tar --json | python3 -c 'import json,sys; assert json.load(sys.stdin)[\"config\"][\"config\"][\"Labels\"][\"org.opencontainers.image.title\"]==\"example.com/team/app\"'"

# An archive as older `docker save` writes it: gzip-compressed layer members under
# <id>/layer.tar, one listed through a symlink.
python3 - <<'PY'
import io, json, tarfile
idx = json.load(open("lay/index.json"))
desc = [m for m in idx["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "v1"][0]
man = json.load(open("lay/blobs/sha256/" + desc["digest"][7:]))
cfg = open("lay/blobs/sha256/" + man["config"]["digest"][7:], "rb").read()
with tarfile.open("old.tar", "w", format=tarfile.USTAR_FORMAT) as t:
    def add(name, data):
        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    add("config.json", cfg)
    names = []
    for i, l in enumerate(man["layers"]):
        add(f"l{i}/layer.tar", open("lay/blobs/sha256/" + l["digest"][7:], "rb").read())
        names.append(f"l{i}/layer.tar")
    link = tarfile.TarInfo("alias/layer.tar"); link.type = tarfile.SYMTYPE; link.linkname = "../l0/layer.tar"
    t.addfile(link)
    names[0] = "alias/layer.tar"
    add("manifest.json", json.dumps([{"Config": "config.json", "RepoTags": ["old/app:x"], "Layers": names}]).encode())
PY
check "an archive with compressed, linked members copies to a layout" "$PI" copy docker-archive:old.tar oci:fromold -q
check "... its layers keep their (gzip) digests" test "$(layer_digests fromold x)" = "$(layer_digests lay v1)"
check "... the tag comes from its RepoTags" bash -c "grep -q '\"x\"' fromold/index.json"
# RepoTags entries that are not REPOSITORY:TAG (an option smuggled in, no tag, a digest)
# are refused, naming the archive, before anything is written.
for bad in 'x/y:v1 --label evil=1' 'x/y' 'x/y@sha256:0000000000000000000000000000000000000000000000000000000000000000'; do
  python3 - "$bad" <<'PY'
import json, sys, tarfile
with tarfile.open("old.tar") as src, tarfile.open("badtag.tar", "w", format=tarfile.USTAR_FORMAT) as dst:
    for m in src.getmembers():
        data = src.extractfile(m) if m.isfile() else None
        if m.name == "manifest.json":
            j = json.load(data)
            j[0]["RepoTags"] = [sys.argv[1]]
            body = json.dumps(j).encode()
            m.size = len(body)
            import io
            data = io.BytesIO(body)
        dst.addfile(m, data)
PY
  expect_fail "a docker-archive whose RepoTags has '$bad' is refused (exit 3), nothing written" 3 \
    "badtag.tar: manifest.json RepoTags entry .* is not a repository and a tag" "$PI" copy docker-archive:badtag.tar oci:badtag-out
  check "... no layout was made" test ! -e badtag-out
done

# A flipped byte inside an uncompressed layer member: caught, nothing stored.
python3 - <<'PY'
import tarfile
with tarfile.open("img.tar") as t:
    m = [m for m in t.getmembers() if m.name.endswith(".tar")][0]
data = bytearray(open("img.tar", "rb").read())
data[m.offset_data + 1000] ^= 0xFF
open("bad.tar", "wb").write(bytes(data))
PY
expect_fail "a corrupt archive member is an integrity error (exit 8)" 8 "does not match" \
  "$PI" copy docker-archive:bad.tar oci:frombad:v1 -q
no_bad_blob() { [[ ! -d frombad/blobs ]] || blobs_intact frombad; }
check "... and left no blob that looks complete" no_bad_blob
expect_fail "... also on the way to another archive (diff_id checked)" 8 "diff_id|does not match" \
  "$PI" copy docker-archive:bad.tar docker-archive:bad2.tar -q
check "... which was not written" test ! -e bad2.tar

# --- registry -> docker-archive: each layer decompressed once, via a spool file --------
check "pull to a docker-archive" "$PI" pull "$R/team/app:v1" -o docker-archive:pulled.tar --insecure -q
check "... podman-loadable (skopeo reads it)" skopeo inspect docker-archive:pulled.tar
check "... no spool file left behind" bash -c "! ls -a | grep -q '^\.spool'"
finish
