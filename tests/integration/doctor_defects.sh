#!/usr/bin/env bash
# Defects of `paddle-image doctor` fixed for issue 9, each checked against fixture hosts
# (tests/fixtures/hosts) with the fake NVML/libcuda: garbage image labels and --requires
# values are refused naming the label/key; facts an image does not state are derived
# from the compatibility matrix (never a PASS, marked in text and JSON); --render
# validates and quotes what it writes; --image reads registry images (manifest and
# config; layers only with --scan-layers) from a real local registry.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
HOSTS=$ROOT/tests/fixtures/hosts
gcc -shared -fPIC -O1 -Wall -Werror -Wl,-soname,libnvidia-ml.so.1 -o fake-nvml.so "$SUPPORT/fakegpu/fake_nvml.c"
gcc -shared -fPIC -O1 -Wall -Werror -Wl,-soname,libcuda.so.1 -o fake-cuda.so "$SUPPORT/fakegpu/fake_cuda.c"
for s in healthy-8xh100 driver470-cuda12-image geforce-forward-compat-804; do
  bash "$SUPPORT/prepare-host.sh" "$HOSTS/$s" "$WORK/h/$s" "$WORK/fake-nvml.so" "$WORK/fake-cuda.so" >/dev/null
done
doctor_on() { # SCENARIO OUT [ARGS...] -> stdout in OUT, stderr in OUT.err, exit code in $rc
  local s=$1 o=$2; shift 2
  rc=0
  PI_FAKE_GPU_SCENARIO="$WORK/h/$s/scenario.conf" "$PI" doctor --root "$WORK/h/$s/root" --timeout 5 "$@" \
    >"$WORK/$o" 2>"$WORK/$o.err" </dev/null || rc=$?
}
# st FILE ID -> "STATUS|derived_from" of one check in a --json report
st() { python3 -c 'import json,sys
c={c["id"]:c for c in json.load(open(sys.argv[1]))["checks"]}[sys.argv[2]]
print(c["status"]+"|"+c.get("derived_from",""))' "$1" "$2"; }
export -f st

# --- 8b: garbage labels name the label and the image; --requires values are checked ---
mkdir -p app && echo x >app/x
# The build refuses such `requires:` values (spec_defects.sh) and io.paddle-image.*
# labels that do not parse, so the garbage goes into the config afterwards, as an image
# built by another tool could carry it.
mkimg() { # NAME LABELS-JSON -> oci:NAME:v1
  printf 'image: {tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: app/, to: /app/}]\n' >"$1.yaml"
  "$PI" build "$1.yaml" -q -o "oci:$1:v1" >/dev/null
  patch_config "$1" "c['config'].setdefault('Labels', {}).update($2)"
}
mkimg banana '{"io.paddle-image.cuda.version": "banana"}'
doctor_on healthy-8xh100 banana.out --image oci:banana:v1
check "cuda: banana is an input error (exit 3)" test "$rc" = 3
check "... naming the label's full key, the value and the image" \
  grep -q "oci:banana:v1.*label io.paddle-image.cuda.version='banana' is not a version" banana.out.err
mkimg badarch '{"io.paddle-image.cuda.version": "12.6", "io.paddle-image.gpu.archs": "sm_80,ampere"}'
doctor_on healthy-8xh100 badarch.out --image oci:badarch:v1
check "a garbage gpu.archs entry is an input error naming the label and the entry" \
  bash -c "test $rc = 3 && grep -q \"label io.paddle-image.gpu.archs='sm_80,ampere'.*'ampere'\" badarch.out.err"
mkimg hugever '{"io.paddle-image.cuda.version": "12.6", "io.paddle-image.driver.min": "99999999999999999999.1"}'
doctor_on healthy-8xh100 hugever.out --image oci:hugever:v1
check "an overlong version in a label is an input error, not an internal one" \
  bash -c "test $rc = 3 && grep -q 'io.paddle-image.driver.min' hugever.out.err"
expect_fail "--requires sm=abc is refused, listing the accepted forms" 2 "sm=abc is not an architecture.*sm_90, 90 or 9.0" \
  "$PI" doctor --requires sm=abc
expect_fail "--requires sm=sm_abc is refused" 2 "not an architecture" "$PI" doctor --requires sm=sm_abc
expect_fail "--requires with an item that is not KEY=VALUE" 2 "'bogus' is not KEY=VALUE" "$PI" doctor --requires cuda=12.6,bogus
expect_fail "--requires with an empty value" 2 "'cuda=' is not KEY=VALUE" "$PI" doctor --requires cuda=
expect_fail "--requires paddle=three" 2 "paddle=three is not a Paddle version" "$PI" doctor --requires paddle=three
expect_fail "--requires driver=5x" 2 "driver=5x is not a version" "$PI" doctor --requires driver=5x
expect_fail "--requires cuda twice" 2 "cuda is given 2 times" "$PI" doctor --requires cuda=12.6,cuda=12.4
doctor_on healthy-8xh100 sm9.json --requires cuda=12.4,sm=9.0 --json
check "--requires sm=9.0 is read as sm_90" bash -c "[[ \$(st sm9.json image.gpu-arch) == 'PASS|' ]]"

# --- 9: facts the image does not state are derived from the matrix ---------------
doctor_on healthy-8xh100 cuda117.json --requires cuda=11.7 --json
check "CUDA 11.7 alone on H100: gpu-arch FAIL (sm_90 beyond every sm_ CUDA 11.7 targets), marked derived" \
  bash -c "[[ \$(st cuda117.json image.gpu-arch) == 'FAIL|CUDA 11.7 can target '*cuda.yaml* ]]"
check "... and the report's facts say what was derived and from what" python3 -c '
import json,sys; d=json.load(open(sys.argv[1]))["facts"]["image"]["derived"]
assert "sm_87" in d["archs"]["value"] and "CUDA 11.7" in d["archs"]["from"], d' cuda117.json
doctor_on healthy-8xh100 cuda117.txt --requires cuda=11.7
check "... and the text says so" grep -q "^FAIL  image.gpu-arch  *derived from the compatibility matrix (CUDA 11.7 can target" cuda117.txt
doctor_on healthy-8xh100 cuda126.json --requires cuda=12.6 --json
check "CUDA 12.6 alone on H100: gpu-arch WARN, never PASS" bash -c "[[ \$(st cuda126.json image.gpu-arch) == WARN\|?* ]]"
check "... and the node passes (exit 0)" test "$rc" = 0
doctor_on healthy-8xh100 p30cu118.json --requires paddle=3.0.0,cuda=11.8 --json
check "Paddle 3.0.0 + CUDA 11.8 on H100: the published image's row (up to sm_89): FAIL" \
  bash -c "[[ \$(st p30cu118.json image.gpu-arch) == 'FAIL|Paddle 3.0.0 image 3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6 ('* ]]"
doctor_on driver470-cuda12-image p33.json --requires paddle=3.3.0 --json
check "Paddle 3.3.0 alone on driver 470: FAIL below the lowest candidate's minimum (525.60.13)" \
  bash -c "[[ \$(st p33.json image.cuda-driver) == 'FAIL|Paddle 3.3.0 was published with CUDA 12.6, 12.9, 13.0'* ]] && grep -q 'below 525.60.13' p33.json"
doctor_on healthy-8xh100 p30.json --requires paddle=3.0.0 --json
check "Paddle 3.0.0 alone on H100/550: driver WARN (a candidate runs), arch WARN (a build serves sm_90)" \
  bash -c "[[ \$(st p30.json image.cuda-driver) == WARN\|?* && \$(st p30.json image.gpu-arch) == WARN\|?* ]]"
# A real image that states only its Paddle version.
mkimg paddleonly '{"io.paddle-image.paddle.version": "3.3.0"}'
doctor_on driver470-cuda12-image paddleonly.json --image oci:paddleonly:v1 --json
check "an image labelled only Paddle 3.3.0 on driver 470: derived FAIL, exit 10" \
  bash -c "test $rc = 10 && [[ \$(st paddleonly.json image.cuda-driver) == FAIL\|Paddle* ]]"
# Stated facts keep their PASS and carry no derivation.
mkimg stated '{"io.paddle-image.cuda.version": "12.4", "io.paddle-image.driver.min": "550.54.15", "io.paddle-image.gpu.archs": "sm_90"}'
doctor_on healthy-8xh100 stated.json --image oci:stated:v1 --json
check "stated CUDA and architectures: PASS, nothing marked derived" bash -c "
  [[ \$(st stated.json image.gpu-arch) == 'PASS|' && \$(st stated.json image.cuda-driver) == 'PASS|' ]] &&
  python3 -c 'import json,sys; assert \"derived\" not in json.load(open(sys.argv[1]))[\"facts\"][\"image\"]' stated.json"

# --- 11: --render validates and quotes every value it writes ------------------------
expect_fail "a namespace with a newline (YAML injection) is refused" 2 "is not a Kubernetes namespace" \
  "$PI" doctor --render daemonset --doctor-image reg.example.com/doctor:1 --namespace $'kube-system\n  evil: true'
expect_fail "a namespace with upper case is refused" 2 "not a Kubernetes namespace" \
  "$PI" doctor --render daemonset --doctor-image reg.example.com/doctor:1 --namespace Kube
expect_fail "--render without --doctor-image is a usage error, not a placeholder" 2 "needs --doctor-image" \
  "$PI" doctor --render daemonset
check "... and prints no manifest" test ! -s out.txt
expect_fail "a --doctor-image that is not an image reference" 2 "is not an image reference" \
  "$PI" doctor --render daemonset --doctor-image $'reg.example.com/doctor:1\n        evil: x'
expect_fail "a local --doctor-image (the kubelet cannot pull it)" 2 "must be a registry reference" \
  "$PI" doctor --render daemonset --doctor-image oci:doctor-img:latest
expect_fail "a node-selector value with a newline" 2 "not a Kubernetes label value" \
  "$PI" doctor --render daemonset --doctor-image reg.example.com/doctor:1 --node-selector $'a=b\nevil: true'
expect_fail "a node-selector key that is not a label key" 2 "not a Kubernetes label key" \
  "$PI" doctor --render daemonset --doctor-image reg.example.com/doctor:1 --node-selector 'a: b=c'
check "a valid render" "$PI" doctor --render daemonset --doctor-image reg.example.com:5000/tools/doctor:1.0 \
  --namespace gpu-ops --node-selector nvidia.com/gpu.present=true --node-selector tier= --requires cuda=12.6,sm=90
"$PI" doctor --render daemonset --doctor-image reg.example.com:5000/tools/doctor:1.0 --namespace gpu-ops \
  --node-selector nvidia.com/gpu.present=true --node-selector tier= --requires cuda=12.6,sm=90 >ds.yaml
check "the rendered DaemonSet parses (python3-yaml) to exactly the values given" python3 - ds.yaml <<'PY'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
assert len(docs) == 1, docs
d = docs[0]
assert set(d) == {"apiVersion", "kind", "metadata", "spec"}, d.keys()
assert d["kind"] == "DaemonSet" and d["metadata"]["namespace"] == "gpu-ops", d["metadata"]
assert set(d["metadata"]) == {"name", "namespace", "labels"}, d["metadata"]
t = d["spec"]["template"]["spec"]
assert t["nodeSelector"] == {"nvidia.com/gpu.present": "true", "tier": ""}, t["nodeSelector"]
c = t["containers"]
assert len(c) == 1 and c[0]["image"] == "reg.example.com:5000/tools/doctor:1.0", c
assert c[0]["command"] == ["/usr/local/bin/paddle-image", "doctor", "--root", "/host", "--json", "--node",
                           "$(NODE_NAME)", "--requires", "cuda=12.6,sm=90"], c[0]["command"]
assert t["volumes"][0]["hostPath"]["path"] == "/" and c[0]["volumeMounts"][0]["readOnly"] is True
PY

# --- registry --image: manifest and config only; layers with --scan-layers -----------
registry_start open open "$WORK/reg"
R=$OPEN_HOST
# The image of doctor.sh's forward-compat case: driver files, a forced cuda-compat libcuda.
mkdir -p bad/root/usr/lib/x86_64-linux-gnu bad/root/usr/local/cuda-12.6/compat bad/root/etc/ld.so.conf.d
echo fake >bad/root/usr/lib/x86_64-linux-gnu/libcuda.so.535.129.03
echo fake >bad/root/usr/local/cuda-12.6/compat/libcuda.so.560.28.03
echo /usr/local/cuda-12.6/compat >bad/root/etc/ld.so.conf.d/000-cuda-compat.conf
cat >bad/spec.yaml <<'YAML'
image: {tags: [v1]}
requires: {cuda: "12.6", gpu_archs: [sm_80]}
layers:
  - name: files
    files: [{from: root/, to: /}]
  - name: app
    files: [{from: ../app/, to: /app/, allow_outside: true}]
YAML
check "build and push the test image" "$PI" build bad/spec.yaml -q --push "$R/team/gpu-app:v1" --insecure
blob_gets() { registry_access_count "$OPEN_LOG" GET '/v2/team/gpu-app/blobs/sha256:' '20[06]'; }
g0=$(blob_gets)
doctor_on healthy-8xh100 reg.json --image "$R/team/gpu-app:v1" --insecure --json
check "doctor --image REGISTRY/REPO:TAG checks it (arch FAIL: sm_80 on H100), exit 10" \
  bash -c "test $rc = 10 && [[ \$(st reg.json image.gpu-arch) == 'FAIL|' ]]"
check "... the report names the image by reference and manifest digest" python3 -c '
import json,sys; s=json.load(open(sys.argv[1]))["facts"]["image"]["source"]
assert s.startswith(sys.argv[2]+"/team/gpu-app:v1@sha256:"), s' reg.json "$R"
check "... only the config blob was fetched (no layer)" test "$(($(blob_gets) - g0))" = 1
check "... and the layer checks are skipped" bash -c "[[ \$(st reg.json image.driver-files) == 'SKIP|' ]]"
g0=$(blob_gets)
doctor_on geforce-forward-compat-804 regscan.json --image "$R/team/gpu-app:v1" --insecure --scan-layers --json
check "--scan-layers on a registry image fetches the layers and finds driver files and the forced compat libcuda" \
  bash -c "[[ \$(st regscan.json image.driver-files) == 'FAIL|' && \$(st regscan.json image.forward-compat) == 'FAIL|' ]]"
check "... config and both layers were fetched" test "$(($(blob_gets) - g0))" = 3
check "... and the temporary layout is gone" bash -c "! ls '$PADDLE_IMAGE_CACHE' | grep -q '^doctor-'"
# An index: the platform's manifest is chosen (--platform).
"$PI" build bad/spec.yaml -q -o oci:bad-layout:v1 >/dev/null
python3 - bad-layout <<'PY'
import hashlib, json, os, sys
lay = sys.argv[1]
idx = json.load(open(lay + "/index.json"))
m = idx["manifests"][0]
def put(obj, mt):
    b = json.dumps(obj, separators=(",", ":")).encode()
    d = hashlib.sha256(b).hexdigest()
    open(f"{lay}/blobs/sha256/{d}", "wb").write(b)
    return {"mediaType": mt, "digest": "sha256:" + d, "size": len(b)}
arm = dict(m, platform={"os": "linux", "architecture": "arm64"})
arm.pop("annotations", None)
# the arm64 entry points at a manifest whose config says sm_90 (a different image)
man = json.load(open(f"{lay}/blobs/sha256/{m['digest'][7:]}"))
cfg = json.load(open(f"{lay}/blobs/sha256/{man['config']['digest'][7:]}"))
cfg["config"]["Labels"]["io.paddle-image.gpu.archs"] = "sm_90"
cfg["architecture"] = "arm64"
man["config"] = put(cfg, man["config"]["mediaType"])
arm.update(put(man, man["mediaType"]))
amd = dict(m, platform={"os": "linux", "architecture": "amd64"})
amd.pop("annotations", None)
index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [amd, arm]}
d = put(index, index["mediaType"])
d["annotations"] = {"org.opencontainers.image.ref.name": "multi"}
idx["manifests"].append(d)
json.dump(idx, open(lay + "/index.json", "w"))
PY
check "push an index (amd64: sm_80, arm64: sm_90)" "$PI" push oci:bad-layout:multi "$R/team/gpu-app:multi" --insecure -q --all
doctor_on healthy-8xh100 amd.json --image "$R/team/gpu-app:multi" --insecure --json
doctor_on healthy-8xh100 arm.json --image "$R/team/gpu-app:multi" --insecure --platform linux/arm64 --json
check "an index resolves to linux/amd64 by default (sm_80: FAIL) and to --platform linux/arm64 (sm_90: PASS)" \
  bash -c "[[ \$(st amd.json image.gpu-arch) == 'FAIL|' && \$(st arm.json image.gpu-arch) == 'PASS|' ]]"
doctor_on healthy-8xh100 missing.out --image "$R/team/nothing:v1" --insecure
check "a missing registry image: exit 7, naming the --image" bash -c "test $rc = 7 && grep -q -- '--image $R/team/nothing:v1' missing.out.err"
# Credentials through the same flags as push/pull.
registry_start basic htpasswd "$WORK/reg"
check "push to a registry with basic auth" bash -c "printf '%s\n' '$BASIC_PASS' | '$PI' push oci:bad-layout:v1 $BASIC_HOST/team/app:v1 --insecure -q --username alice --password-stdin"
rc=0; printf '%s\n' "$BASIC_PASS" | PI_FAKE_GPU_SCENARIO="$WORK/h/healthy-8xh100/scenario.conf" "$PI" doctor \
  --root "$WORK/h/healthy-8xh100/root" --image "$BASIC_HOST/team/app:v1" --insecure --username alice --password-stdin --json >auth.json 2>auth.err || rc=$?
check "doctor --image with --username/--password-stdin reads a protected registry" \
  bash -c "test $rc = 10 && [[ \$(st auth.json image.gpu-arch) == 'FAIL|' ]]"
rc=0; PI_FAKE_GPU_SCENARIO="$WORK/h/healthy-8xh100/scenario.conf" "$PI" doctor --root "$WORK/h/healthy-8xh100/root" \
  --image "$BASIC_HOST/team/app:v1" --insecure </dev/null >noauth.out 2>noauth.err || rc=$?
check "... and without credentials it is an auth error (exit 5)" test "$rc" = 5
finish
