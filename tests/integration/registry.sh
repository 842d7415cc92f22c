#!/usr/bin/env bash
# Push, pull and copy against a real registry (Debian's docker-registry on
# 127.0.0.1): skopeo interop both ways, blobs counted from the registry's own access
# log, registry bases (mounted, never downloaded for a push; pulled once into the
# cache for local outputs), base: auto pulled from a --matrix override, and the
# built image run with runc after a round trip.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
registry_start open open "$WORK/reg"
R=$OPEN_HOST
uploads() { registry_access_count "$OPEN_LOG" PUT '/v2/[^ ]*/blobs/uploads/[^ ]*digest=' 201; }
manifest_puts() { registry_access_count "$OPEN_LOG" PUT '/v2/[^ ]*/manifests/' 201; }
blob_gets() { registry_access_count "$OPEN_LOG" GET '/v2/[^ ]*/blobs/sha256:' '20[06]'; }
js() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2" "$1"; }

# A stand-in base that runs: busybox as /bin/sh.
mkdir -p stand/bin stand/etc
cp /bin/busybox stand/bin/busybox
ln -sf busybox stand/bin/sh
ln -sf busybox stand/bin/cat
echo "stand-in for the Paddle image" >stand/etc/paddle-stand-in
cat >stand.yaml <<'YAML'
layers:
  - name: stand-in
    files: [{from: stand/, to: /}]
config:
  env: {PATH: "/bin"}
  cmd: [/bin/sh]
YAML
"$PI" build stand.yaml -q -o oci:bases:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 >/dev/null

# --- push an OCI layout, interop with skopeo ------------------------------------
check "push an OCI layout" "$PI" push oci:bases:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 \
  "$R/paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5" --insecure -q --metadata-file push1.json
check "first push uploads the layer and the config" js push1.json 'assert j["stats"]["blobs_uploaded"]==2, j'
check "skopeo reads what we pushed" skopeo inspect --tls-verify=false "docker://$R/paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5"
check "skopeo copies it out and the blobs verify" bash -c "skopeo copy -q --src-tls-verify=false docker://$R/paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 oci:skout:x && umoci unpack --image skout:x skb >/dev/null && test -f skb/rootfs/etc/paddle-stand-in"
check "skopeo pushes, we pull and verify" bash -c "skopeo copy -q --dest-tls-verify=false oci:bases:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 docker://$R/from/skopeo:s1 && '$PI' pull $R/from/skopeo:s1 -o oci:fromsk --insecure -q"
check "what we pulled from skopeo's push is intact and runnable by umoci" bash -c "umoci unpack --image fromsk:s1 fsb >/dev/null && test -x fsb/rootfs/bin/busybox"
check "pulled layout has only verified blobs" blobs_intact fromsk
check "pull records bytes downloaded" bash -c "'$PI' pull $R/from/skopeo:s1 -o oci:fromsk2 --insecure --json -q >pull.json"
check "pull metadata counts the downloaded blobs" js pull.json 'assert j["stats"]["blobs_downloaded"]==2 and j["stats"]["bytes_downloaded"]>100000, j'
check "pull to a docker-archive that podman loads" bash -c "'$PI' pull $R/from/skopeo:s1 -o docker-archive:arch.tar --insecure -q && skopeo inspect docker-archive:arch.tar >/dev/null"
check "a docker-archive is a source too: copy it to a registry" "$PI" copy docker-archive:arch.tar "$R/from/archive:a1" --insecure -q
diff_ids() { skopeo inspect --config --tls-verify=false "$1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"]["diff_ids"])'; }
same_content() { [[ "$(diff_ids "docker://$R/from/archive:a1")" == "$(diff_ids "docker://$R/from/skopeo:s1")" ]]; }
check "skopeo reads the copy: the same layer contents (diff_ids) as the original" same_content
check "a docker-archive written by skopeo copies to a layout that umoci unpacks" bash -c "skopeo copy -q oci:bases:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 docker-archive:sk.tar:x/y:z && '$PI' copy docker-archive:sk.tar oci:fromskarch:z -q && umoci unpack --image fromskarch:z fsa >/dev/null && test -f fsa/rootfs/etc/paddle-stand-in"
check "and it unpacks after a pull" bash -c "'$PI' pull $R/from/archive:a1 -o oci:fromarch --insecure -q && umoci unpack --image fromarch:a1 fab >/dev/null && test -x fab/rootfs/bin/busybox"
expect_fail "a file that is not a docker-archive (exit 3)" 3 "no manifest.json" "$PI" copy docker-archive:stand.yaml oci:bad:x -q
check "inspect a registry reference" bash -c "'$PI' inspect $R/from/skopeo:s1 --insecure | grep -q 'Platform:     linux/amd64'"
check "tags lists the repository" bash -c "'$PI' tags $R/paddlepaddle/paddle --insecure | grep -qx 3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5"

# --- progress: bars on a terminal, plain lines otherwise -------------------------
check "on a terminal, a bar per blob and a total" bash -c "env -u CI script -qec \"'$PI' push oci:bases:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 $R/progress/tty:v1 --insecure\" /dev/null >tty.txt && grep -q 'total \[#' tty.txt && grep -q 'sha256:[0-9a-f]\{12\} \[#' tty.txt"
check "in CI, plain lines per blob" bash -c "CI=true '$PI' push oci:bases:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 $R/progress/ci:v1 --insecure 2>ci.txt && grep -qE '^  sha256:[0-9a-f]{12} 100% \(' ci.txt && ! grep -q \$'\\033' ci.txt"
check "--quiet prints nothing on stderr" bash -c "'$PI' push oci:bases:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 $R/progress/q:v1 --insecure -q 2>q.txt && test ! -s q.txt"

# --- build --push on a registry base: base layers mounted, never uploaded; read once
# (streamed, not kept) for the base's view, which later builds take from the cache ----
mkdir -p app
echo 'echo hello from the app' >app/run.sh
cat >app.yaml <<YAML
image: {name: example.com/ocr/app, tags: [v1]}
base: $R/paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5
layers:
  - name: app
    files: [{from: app/, to: /app/}]
config:
  cmd: [/bin/sh, /app/run.sh]
YAML
gets0=$(blob_gets)
up0=$(uploads)
check "build --push on a registry base" "$PI" build app.yaml --push "$R/team/ocr:1.0" --tag latest --insecure -q \
  --metadata-file build1.json --digest-file build1.digest --image-refs build1.refs
check "the base layer was mounted from the other repository" js build1.json 'r=j["registry"]; assert r["blobs_mounted"]==1 and r["bytes_uploaded"]<4096, r'
check "the base config and, once, its layer for the base view were read (registry access log)" test "$(( $(blob_gets) - gets0 ))" -eq 2
check "only the app layer and the config travelled (registry access log)" test "$(( $(uploads) - up0 ))" -eq 2
check "several tags in one push" bash -c "'$PI' tags $R/team/ocr --insecure | sort | tr '\n' ' ' | grep -qx '1.0 latest '"
check "--image-refs lists each tag with the digest" bash -c "test \$(grep -c '@$(cat build1.digest)' build1.refs) -eq 2"
up1=$(uploads)
m1=$(manifest_puts)
check "a second push of the same image" "$PI" build app.yaml --push "$R/team/ocr:1.0" --insecure -q --metadata-file build2.json
check "uploads no blob (registry access log)" test "$(uploads)" -eq "$up1"
check "and puts no manifest" test "$(manifest_puts)" -eq "$m1"
check "metadata says everything was there" js build2.json 'r=j["registry"]; assert r["bytes_uploaded"]==0 and r["blobs_skipped"]==3, r'
echo 'echo hello again' >>app/run.sh
up2=$(uploads)
m2=$(manifest_puts)
gets3=$(blob_gets)
check "an app-only change pushes" "$PI" build app.yaml --push "$R/team/ocr:1.1" --insecure -q --metadata-file build3.json
check "... reading only the base config: the base view comes from the cache (registry access log)" \
  test "$(( $(blob_gets) - gets3 ))" -eq 1
check "exactly one layer blob and the config (registry access log)" test "$(( $(uploads) - up2 ))" -eq 2
check "and one manifest (registry access log)" test "$(( $(manifest_puts) - m2 ))" -eq 1
check "metadata agrees" js build3.json 'r=j["registry"]; assert r["blobs_uploaded"]==2 and r["blobs_skipped"]==1, r'

# The pushed image runs.
check "pull the pushed image" "$PI" pull "$R/team/ocr:1.1" -o oci:ran --insecure -q
check "it unpacks with umoci" umoci unpack --image ran:1.1 bundle
runs() { run_in_bundle bundle /bin/sh /app/run.sh | grep -q 'hello again'; }
check "and runs under runc" runs

# --- local outputs from a registry base: base blobs pulled once into the cache ----
gets1=$(blob_gets)
check "build -o oci: on a registry base" "$PI" build app.yaml -o oci:local -q --insecure --metadata-file local1.json
check "the base layer came through the cache once (and the config)" test "$(( $(blob_gets) - gets1 ))" -eq 2
check "the layout is complete" bash -c "umoci unpack --image local:v1 lb >/dev/null && test -f lb/rootfs/etc/paddle-stand-in && test -f lb/rootfs/app/run.sh"
gets2=$(blob_gets)
check "a second local build reuses the cached base" "$PI" build app.yaml -o oci:local2 -o docker-archive:local2.tar -q --insecure
check "without downloading a layer again (only the config)" test "$(( $(blob_gets) - gets2 ))" -eq 1
gets3=$(blob_gets)
check "cache prune drops the cached base" bash -c "'$PI' cache prune --max-size 1 >/dev/null && '$PI' build app.yaml -o oci:local3 -q --insecure"
check "and the next build pulls it again" test "$(( $(blob_gets) - gets3 ))" -eq 2
check "a cache size limit on the build keeps the cache under it" bash -c "'$PI' build app.yaml -o oci:local4 -q --insecure --cache-max-size 1 && test -z \"\$(find '$PADDLE_IMAGE_CACHE/blobs' -type f)\""

# --- base: auto, pulled from the registry a --matrix override names ---------------
cat >mirror.yaml <<YAML
registries:
  - name: "dockerhub"
    repository: "$R/paddlepaddle/paddle"
    versions: ">=0"
    source: "test registry standing in for Docker Hub"
YAML
cat >auto.yaml <<'YAML'
image: {name: example.com/ocr/auto, tags: [v1]}
base: auto
resolve:
  paddle: "3.0.0"
  gpus: [A100, H100]
  drivers: ["535.104.05"]
layers:
  - name: app
    files: [{from: app/, to: /app/}]
YAML
check "base: auto pulls the chosen image from the registry the matrix names" \
  "$PI" build auto.yaml --matrix mirror.yaml --push "$R/team/auto:v1" --insecure -q --metadata-file auto.json
check "the resolver's choice is the base" js auto.json 'assert j["base"]["name"].endswith("/paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5"), j["base"]; assert j["registry"]["blobs_mounted"]==1, j["registry"]'

# --- referrers: distribution 2.8 has no referrers API, so the fallback tag is read ----
subject=$("$PI" inspect "$R/team/ocr:1.1" --insecure --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
/usr/bin/python3 - "$subject" <<'PY'
import hashlib, json, os, sys
subject = sys.argv[1]
os.makedirs("art/blobs/sha256", exist_ok=True)
def blob(b):
    d = hashlib.sha256(b).hexdigest()
    open("art/blobs/sha256/" + d, "wb").write(b)
    return {"digest": "sha256:" + d, "size": len(b)}
cfg = dict(blob(b"{}"), mediaType="application/vnd.oci.empty.v1+json")
layer = dict(blob(b'{"sbom": "stand-in"}'), mediaType="application/spdx+json")
man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
       "artifactType": "application/spdx+json", "config": cfg, "layers": [layer],
       "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": subject, "size": 1}}
m = dict(blob(json.dumps(man).encode()), mediaType=man["mediaType"])
open("art/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
json.dump({"schemaVersion": 2, "manifests": [dict(m, annotations={"org.opencontainers.image.ref.name": "sbom"})]},
          open("art/index.json", "w"))
fallback = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [dict(m, artifactType="application/spdx+json")]}
open("fallback.json", "w").write(json.dumps(fallback))
open("artifact.digest", "w").write(m["digest"])
PY
check "an artifact with a subject pushes" "$PI" push oci:art:sbom "$R/team/ocr:sbom-artifact" --insecure -q
check "its fallback referrers tag is written" curl -sf -X PUT -H 'Content-Type: application/vnd.oci.image.index.v1+json' \
  --data-binary @fallback.json "http://$R/v2/team/ocr/manifests/sha256-${subject#sha256:}"
has_referrer() { "$PI" inspect "$R/team/ocr:1.1" --referrers --insecure --json >refs.json && grep -q "$(cat artifact.digest)" refs.json && grep -q 'fallback tag sha256-' refs.json; }
check "inspect --referrers finds it through the fallback tag" has_referrer
no_referrers() { "$PI" inspect "$R/team/ocr:1.0" --referrers --insecure --json | /usr/bin/python3 -c 'import json,sys; assert json.load(sys.stdin)["referrers"]==[]'; }
check "an image without referrers has none" no_referrers

# --- copy between registries and layouts ----------------------------------------
check "registry to registry copy mounts within one registry" bash -c "'$PI' copy $R/team/ocr:1.1 $R/mirror/ocr:1.1 --insecure -q --no-signatures --json >copy.json"
check "copy moved no bytes" js copy.json 'assert j["stats"]["bytes_uploaded"]==0 and j["stats"]["blobs_mounted"]==3, j["stats"]'
check "without --no-signatures the referrers go along (mounted too)" bash -c "'$PI' copy $R/team/ocr:1.1 $R/withrefs/ocr:1.1 --insecure -q --json >copyrefs.json"
check "... the artifact's two blobs and its manifest, and the fallback index" js copyrefs.json 'assert j["stats"]["blobs_mounted"]==5 and j["stats"]["manifests_put"]==3, j["stats"]'
check "... and inspect --referrers finds it at the destination" bash -c "'$PI' inspect $R/withrefs/ocr:1.1 --referrers --insecure --json | grep -q \"\$(cat artifact.digest)\""
registry_start second open "$WORK/reg"
check "registry to another registry streams the blobs" bash -c "'$PI' copy $R/team/ocr:1.1 $SECOND_HOST/ocr:1.1 --insecure -q --no-signatures --json >copy2.json"
same_digest() {
  [[ "$(skopeo inspect --tls-verify=false "docker://$SECOND_HOST/ocr:1.1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["Digest"])')" == "$(js copy2.json 'print(j["digest"])')" ]]
}
check "the copy has the same digest" same_digest
check "nothing touched the local disk" js copy2.json 'assert j["stats"]["blobs_uploaded"]==3 and j["stats"]["bytes_downloaded"]==j["stats"]["bytes_uploaded"], j["stats"]'

# --- an index: platform selection and --all ---------------------------------------
check "skopeo builds a two-platform index" bash -c "
  '$PI' build stand.yaml -q -o oci:arm:a >/dev/null 2>&1 || true
  /usr/bin/python3 - <<'PY'
import json, hashlib, os, shutil
# Make a second platform by rewriting the config's architecture.
lay='bases'
idx=json.load(open(lay+'/index.json'))
m=idx['manifests'][0]
man=json.load(open(lay+'/blobs/sha256/'+m['digest'][7:]))
cfg=json.load(open(lay+'/blobs/sha256/'+man['config']['digest'][7:]))
cfg['architecture']='arm64'
cb=json.dumps(cfg,separators=(',',':')).encode()
cd=hashlib.sha256(cb).hexdigest(); open(lay+'/blobs/sha256/'+cd,'wb').write(cb)
man2=dict(man); man2['config']=dict(man['config'], digest='sha256:'+cd, size=len(cb))
mb=json.dumps(man2,separators=(',',':')).encode(); md=hashlib.sha256(mb).hexdigest()
open(lay+'/blobs/sha256/'+md,'wb').write(mb)
ix={'schemaVersion':2,'mediaType':'application/vnd.oci.image.index.v1+json','manifests':[
 {'mediaType':m['mediaType'],'digest':m['digest'],'size':m['size'],'platform':{'os':'linux','architecture':'amd64'}},
 {'mediaType':m['mediaType'],'digest':'sha256:'+md,'size':len(mb),'platform':{'os':'linux','architecture':'arm64'}}]}
ib=json.dumps(ix,separators=(',',':')).encode(); idg=hashlib.sha256(ib).hexdigest()
open(lay+'/blobs/sha256/'+idg,'wb').write(ib)
idx['manifests'].append({'mediaType':ix['mediaType'],'digest':'sha256:'+idg,'size':len(ib),'annotations':{'org.opencontainers.image.ref.name':'multi'}})
json.dump(idx,open(lay+'/index.json','w'))
PY"
check "push --all sends the whole index" "$PI" push oci:bases:multi "$R/multi/img:m" --all --insecure -q
check "skopeo sees both platforms" bash -c "skopeo inspect --raw --tls-verify=false docker://$R/multi/img:m | grep -q arm64"
check "pull picks linux/amd64 by default" bash -c "'$PI' pull $R/multi/img:m -o oci:pm --insecure -q --json | grep -q '\"media_type\": \"application/vnd.oci.image.manifest.v1+json\"'"
check "--platform linux/arm64 picks the other" bash -c "'$PI' pull $R/multi/img:m -o oci:pa --platform linux/arm64 --insecure -q && '$PI' inspect oci:pa:m | grep -q 'linux/arm64'"
expect_fail "a platform the index lacks is refused with what it has" 9 "no image for linux/s390x.*linux/amd64" \
  "$PI" pull "$R/multi/img:m" -o oci:px --platform linux/s390x --insecure -q
finish
