#!/usr/bin/env bash
# `paddle-image resolve`, `matrix show|lint` and `base: auto` in a build, end to end.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"

out=$("$PI" resolve --paddle 2.6.1 --gpu H100 --driver 535.104.05)
check "H100 + Paddle 2.6 picks the CUDA 12.0 image" grep -qx "docker.io/paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6" <(head -1 <<<"$out")
"$PI" resolve --paddle 3.0.0 --gpu "Tesla T4" --driver 470.82.01 --json >t4.json
check "T4 on driver 470 is accepted under minor-version compatibility" python3 -c '
import json; j=json.load(open("t4.json")); c=j["candidates"][0]
assert j["choice"].endswith("3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6"), j["choice"]
assert c["driver_compatibility"]=="minor-version" and any("PTX JIT" in x for x in c["caveats"])'
expect_fail "... and refused with --strict-driver (exit 9)" 9 "" "$PI" resolve --paddle 3.0.0 --gpu T4 --driver 470.82.01 --strict-driver
check "the refusal names the minimum driver" grep -q "upgrade the node driver to 520.61.05" "$WORK/out.txt"
expect_fail "H100 on driver 470 with Paddle 3.0 is refused" 9 "" "$PI" resolve --paddle 3.0.0 --gpu H100 --driver 470.82.01
check "... naming the GPU and the driver with fixes" bash -c "grep -q 'H100 (sm_90) is not among' $WORK/out.txt && grep -q 'needs driver 560.28.03' $WORK/out.txt && grep -q 'fix:' $WORK/out.txt"
"$PI" resolve --gpu T4 --gpu H100 --driver 525.60.13 --driver 535.104.05 --paddle 3.0.0 --all --json >fleet.json
check "mixed T4/H100 fleet gets the image serving both" python3 -c '
import json; j=json.load(open("fleet.json"))
assert j["choice"].endswith("3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5"), j["choice"]
assert len(j["candidates"])==j["candidate_count"]>=1'
expect_fail "RTX 5090 needs 3.2.0 cu129 or newer" 9 "" "$PI" resolve --paddle 3.1.0 --gpu "RTX 5090" --driver 575.57.08
check "... and the fix names a 3.2+ build" grep -q "Paddle 3.[23].0 cuda12.9" "$WORK/out.txt"
expect_fail "CUDA 12.7 was never released" 3 "CUDA 12.7 was never released" "$PI" resolve --cuda 12.7
expect_fail "unknown GPU gets did you mean" 3 "did you mean 'A100'" "$PI" resolve --gpu A1OO
expect_fail "malformed driver names the flag" 3 "--driver\[0\]: 'banana' is not a version" "$PI" resolve --driver banana
expect_fail "contradictory cuDNN and CUDA" 3 "contradict each other" "$PI" resolve --cuda 11.8 --cudnn 9.9

check "matrix show cuda lists 12.7 as never released" bash -c "'$PI' matrix show cuda | grep -qE '^12\.7 +never released'"
check "matrix show --json has every table" bash -c "'$PI' matrix show --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert {\"cuda\",\"gpus\",\"cudnn\",\"tensorrt\",\"paddle\",\"registries\",\"forward_compat\"} <= set(j)'"
cat >mirror.yaml <<'YAML'
registries:
  - name: internal
    repository: "127.0.0.1:5000/paddlepaddle/paddle"
    versions: ">=0"
    source: "our mirror"
paddle:
  - version: "3.4.0"
    python: "3.12"
    min_cc: "7.5"
    images:
      - tag: "3.4.0-gpu-cuda12.9-cudnn9.9"
        cuda: "12.9"
        cudnn: "9.9"
        archs: [75, 80, 86, 89, 90, 100, 120]
        source: "internal build"
        confirmed: true
YAML
check "matrix lint accepts a good user file" "$PI" matrix lint mirror.yaml
out=$("$PI" resolve --matrix mirror.yaml --gpu A100 --driver 575.57.08 --registry 127.0.0.1:5000/paddlepaddle/paddle)
check "a user matrix adds a release, resolved from a mirror registry" grep -qx "127.0.0.1:5000/paddlepaddle/paddle:3.4.0-gpu-cuda12.9-cudnn9.9" <(head -1 <<<"$out")
sed 's/        cudnn: "9.9"/        cudnnn: "9.9"/' mirror.yaml >broken.yaml
expect_fail "a broken matrix file gets file:line and the row" 3 "broken.yaml:[0-9]+: image 3.4.0-gpu-cuda12.9-cudnn9.9 image: unknown key 'cudnnn'|broken.yaml:[0-9]+: .*unknown key 'cudnnn'" "$PI" matrix lint broken.yaml
sed 's/cuda: "12.9"/cuda: "12.7"/' mirror.yaml >broken2.yaml
expect_fail "a row naming an unreleased CUDA" 3 "broken2.yaml:[0-9]+: image 3.4.0-gpu-cuda12.9-cudnn9.9: CUDA 12.7 was never released" "$PI" matrix lint broken2.yaml

# base: auto in a build: a small stand-in base stored under the real tag name.
mkdir -p stand/etc app
echo "stand-in for the Paddle image" >stand/etc/paddle-stand-in
echo 'print("app")' >app/main.py
cat >stand.yaml <<'YAML'
layers:
  - name: stand-in
    files: [{from: stand/, to: /}]
YAML
"$PI" build stand.yaml -q -o oci:bases:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5 >/dev/null
cat >spec.yaml <<'YAML'
image: {name: example.com/ocr/train, tags: [v1]}
base: auto
resolve:
  paddle: "3.0.0"
  gpus: [A100, H100]
  drivers: ["535.104.05"]
  layout: oci:bases
layers:
  - name: app
    files: [{from: app/, to: /app/}]
YAML
check "base: auto builds on the chosen image" "$PI" build spec.yaml -q -o oci:img:v1 --metadata-file meta.json
"$PI" inspect oci:img:v1 --json >img.json
check "labels carry the chosen image's facts" python3 -c '
import json; l=json.load(open("img.json"))["config"]["config"]["Labels"]
assert l["org.opencontainers.image.base.name"]=="docker.io/paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5"
assert l["io.paddle-image.cuda.version"]=="12.6" and l["io.paddle-image.cudnn.version"]=="9.5"
assert l["io.paddle-image.paddle.version"]=="3.0.0" and l["io.paddle-image.driver.min"]=="560.28.03"
assert l["io.paddle-image.driver.min-compat"]=="525.60.13" and "sm_90" in l["io.paddle-image.gpu.archs"]'
check "metadata records the resolution" python3 -c '
import json; m=json.load(open("meta.json"))
assert m["resolution"]["choice"].endswith("3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5")
assert m["resolution"]["candidates"][0]["driver_compatibility"]=="minor-version"'
check "the stand-in base is the image's first layer" bash -c "umoci unpack --image img:v1 bundle >/dev/null && test -f bundle/rootfs/etc/paddle-stand-in && test -f bundle/rootfs/app/main.py"
sed -i 's/535.104.05/470.82.01/' spec.yaml
expect_fail "base: auto refusal in a build names spec positions (exit 9)" 9 "spec.yaml:[0-9]+:[0-9]+: resolve.drivers" "$PI" build spec.yaml -q -o oci:img:v2
sed -i 's/470.82.01/535.104.05/; s/gpus: \[A100, H100\]/gpus: [A100, H1OO]/' spec.yaml
expect_fail "unknown GPU in the spec names its position" 3 "spec.yaml:[0-9]+:[0-9]+: resolve.gpus\[1\]: unknown GPU 'H1OO'" "$PI" build spec.yaml -q -o oci:img:v3
# Issue 9: pre-releases, partial versions, one-line input errors, aligned tables.
check "a partial --paddle picks the newest patch" bash -c "'$PI' resolve --paddle 2.6 --json | grep -q '\"choice\": \"docker.io/paddlepaddle/paddle:2.6.2-'"
check "without --pre no pre-release is chosen" bash -c "'$PI' resolve --all --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert all(\"b\" not in c[\"paddle\"] for c in j[\"candidates\"]), j[\"choice\"]'"
expect_fail "only pre-releases fit: exit 9 with 'add --pre'" 9 "" "$PI" resolve --paddle 3.0 --cuda 12.3
check "... the fix is on stdout" grep -q 'add --pre' "$WORK/out.txt"
check "--pre accepts it" bash -c "'$PI' resolve --paddle 3.0 --cuda 12.3 --pre --json | grep -q '3.0.0b2'"
expect_fail "--cuda 99 is an input error of one line" 3 "^paddle-image: error: --cuda: CUDA 99 is not a known CUDA release" "$PI" resolve --cuda 99
check "... and short" test "$(wc -c <"$WORK/err.txt")" -lt 400
expect_fail "an empty range is an input error" 3 "admits no version" "$PI" resolve --paddle '>=3.0,<2.0'
check "--driver 470 is read as 470.0 and says so" bash -c "'$PI' resolve --driver 470 | grep -q 'note: driver 470 read as 470.0'"
expect_fail "--gpu '' says the name is empty" 3 "the GPU name is empty" "$PI" resolve --gpu ''
check "matrix show aligns its columns" bash -c "'$PI' matrix show gpus | python3 -c '
import re, sys
rows = [l.rstrip() for l in sys.stdin if l.strip()]
field = re.compile(r\"\\S+(?: \\S+)*\")
starts = [m.start() for m in field.finditer(rows[0])]
assert len(starts) == 4, rows[0]
for r in rows[1:]:
    got = [m.start() for m in field.finditer(r)]
    assert got == starts[:len(got)], (r, got, starts)
'"
# Without resolve.layout the chosen image is pulled from its registry: tested in
# registry.sh against the local test registry (no test contacts Docker Hub).
finish
