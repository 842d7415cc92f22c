#!/usr/bin/env bash
# render k8s-job / paddle-distributed (docs/templates.md#kubernetes-jobs): every
# rendered object validated against the pinned Kubernetes API schemas
# (tests/support/k8s-schemas, k8s_validate.py); the node affinity evaluated by an
# independent scheduler model (node_affinity.py) against a table of GPU Feature
# Discovery label sets (gfd-nodes.json) and compared, node by node, with what
# `paddle-image doctor --image` says on a fake host with the same driver and GPU (the
# compat rules, a different code path) plus the hand-written memory/GFD facts; golden
# files; facts read from a registry; bad input.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
GOLDEN=$ROOT/tests/golden/templates
HOSTS=$ROOT/tests/fixtures/hosts
NODES=$SUPPORT/gfd-nodes.json
PY=/usr/bin/python3
VALIDATE=("$PY" "$SUPPORT/k8s_validate.py")
AFFINITY=("$PY" "$SUPPORT/node_affinity.py")

# --- images with different needs (scratch bases: only the labels matter here) ----------
mkdir -p app && echo 'print("train")' >app/train.py
make_spec() { # NAME REQUIRES-YAML
  cat >"$1.yaml" <<EOF
image:
  name: registry.example.com/team/$1
base: scratch
requires:
$2
layers:
  - name: code
    files:
      - {from: app/, to: /app/}
config:
  env:
    FLAGS_fraction_of_gpu_memory_to_use: "0.9"
    NCCL_DEBUG: WARN
    UNRELATED: "x"
  cmd: [python3, /app/train.py, --epochs, "3"]
EOF
}
# a: a new driver floor with a rev, Turing to Hopper, 40 GiB.
make_spec a '  cuda: "12.6"
  paddle: "3.0.0"
  driver_min: "560.28.03"
  gpu_archs: [sm_75, sm_80, sm_86, sm_90]
  gpu_memory: 40Gi'
# b: a driver floor at a rev boundary (535.104.05: rev "05"), Ampere and Hopper only.
make_spec b '  cuda: "12.2"
  driver_min: "535.104.05"
  gpu_archs: [sm_80, sm_90]'
# c: no driver label: the floor comes from the matrix's CUDA 11.8 row; Volta and up.
make_spec c '  cuda: "11.8"
  gpu_archs: [sm_70, sm_75, sm_80, sm_86]'
# d: a two-part floor (550.54), sm_86/sm_89 only (A10, L40S, RTX 4090), 20 GiB.
make_spec d '  cuda: "12.4"
  driver_min: "550.54"
  gpu_archs: [sm_86, sm_89]
  gpu_memory: 20Gi'
for i in a b c d; do
  "$PI" build "$i.yaml" -q -o "oci:img-$i:v1" --digest-file "$i.digest" >/dev/null
done
check "four images built" test -s a.digest -a -s b.digest -a -s c.digest -a -s d.digest
ref() { echo "registry.example.com/team/$1@$(cat "$1.digest")"; }

# --- render, validate, evaluate ------------------------------------------------------------
for i in a b c d; do
  "$PI" render k8s-job "$i.yaml" --image "$(ref "$i")" --facts "oci:img-$i:v1" --gpus 2 -o "job-$i.yaml" 2>/dev/null
done
check "k8s-job of each image is valid against the Kubernetes API schemas" \
  "${VALIDATE[@]}" job-a.yaml job-b.yaml job-c.yaml job-d.yaml

# The doctor's verdict per node and image: a fake host with the node's driver and GPU.
gcc -shared -fPIC -O1 -Wall -Werror -Wl,-soname,libnvidia-ml.so.1 -o fake-nvml.so "$SUPPORT/fakegpu/fake_nvml.c"
gcc -shared -fPIC -O1 -Wall -Werror -Wl,-soname,libcuda.so.1 -o fake-cuda.so "$SUPPORT/fakegpu/fake_cuda.c"
"$PY" - "$NODES" "$HOSTS/healthy-8xh100" scen <<'PY'
# One fixture scenario per GPU node of the table: the healthy H100 host with the
# node's driver version, CUDA driver version, GPU name and compute capability.
import json, os, re, shutil, sys
nodes, template, out = json.load(open(sys.argv[1]))["nodes"], sys.argv[2], sys.argv[3]
for n in nodes:
    if not n.get("gpu_name"):
        continue
    d = os.path.join(out, n["name"])
    shutil.copytree(template, d, symlinks=True)
    old = "550.54.15"
    for p in ("root/proc/driver/nvidia/version", "root/sys/module/nvidia/version", "root/etc/cdi/nvidia.yaml", "libs.conf"):
        f = os.path.join(d, p)
        text = open(f).read().replace(old, n["driver"])
        open(f, "w").write(text)
    conf = open(os.path.join(d, "scenario.conf")).read()
    conf = re.sub(r"(?m)^driver = .*$", "driver = " + n["driver"], conf)
    conf = re.sub(r"(?m)^cuda_driver = .*$", "cuda_driver = %d" % n["cuda_driver"], conf)
    conf = re.sub(r"(?m)^gpu\.\*\.name = .*$", "gpu.*.name = " + n["gpu_name"], conf)
    conf = re.sub(r"(?m)^gpu\.\*\.cc = .*$", "gpu.*.cc = " + n["cc"], conf)
    open(os.path.join(d, "scenario.conf"), "w").write(conf)
PY
: >verdicts.txt
for s in scen/*; do
  node=$(basename "$s")
  bash "$SUPPORT/prepare-host.sh" "$s" "h/$node" fake-nvml.so fake-cuda.so >/dev/null
  for i in a b c d; do
    rc=0
    PI_FAKE_GPU_SCENARIO="h/$node/scenario.conf" "$PI" doctor --root "h/$node/root" --timeout 5 \
      --image "oci:img-$i:v1" --json >"doc-$node-$i.json" 2>/dev/null || rc=$?
    echo "$node $i $("$PY" -c '
import json, sys
c = {x["id"]: x["status"] for x in json.load(open(sys.argv[1]))["checks"]}
print(c.get("image.cuda-driver"), c.get("image.gpu-arch"))' "doc-$node-$i.json")" >>verdicts.txt
  done
done
check "the doctor judged every GPU node of the table for every image" \
  bash -c "[[ \$(wc -l <verdicts.txt) -ge 80 ]] && ! grep -q None verdicts.txt"

for i in a b c d; do
  "${AFFINITY[@]}" "job-$i.yaml" "$NODES" >"match-$i.json"
done
# Expected: the doctor passes the driver and the architectures, the node has GFD
# labels (a node without them is never matched: that is what --no-gpu-affinity is
# for), and its usable memory is at least what the image asks (hand-written table).
"$PY" - "$NODES" verdicts.txt >compare.txt <<'PY'
import json, sys
nodes = {n["name"]: n for n in json.load(open(sys.argv[1]))["nodes"]}
memory = {"a": 40960, "b": 0, "c": 0, "d": 20480}
verdict = {}
for line in open(sys.argv[2]):
    node, img, drv, arch = line.split()
    verdict[(node, img)] = drv == "PASS" and arch == "PASS"
bad = 0
for img in "abcd":
    got = json.load(open("match-%s.json" % img))
    for name, n in nodes.items():
        gfd = "nvidia.com/gpu.compute.major" in n["labels"] and "nvidia.com/cuda.driver.major" in n["labels"]
        want = verdict.get((name, img), False) and gfd and n.get("gpu_memory_mib", 0) >= memory[img]
        status = "ok" if got.get(name) == want else "MISMATCH"
        bad += status != "ok"
        print(status, img, name, "affinity", got.get(name), "expected", want)
print("mismatches", bad)
PY
check "the affinity matches exactly the nodes where the doctor says the image runs (4 images x $(grep -c '^ok a ' compare.txt) nodes)" \
  grep -q '^mismatches 0$' compare.txt
# The hand-written expectations for the boundary cases, independent of the doctor.
m() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "match-$1.json" "$2"; }
check "b: 535.104.05 (rev 05 == floor) is admitted" test "$(m b a100-80-535-104-05)" = True
check "b: 535.104.04 (one rev below) is refused" test "$(m b a100-80-535-104-04)" = False
check "b: 535.129.03 (a higher minor, lower rev) is admitted" test "$(m b a100-80-535-129-03)" = True
check "b: 535.86.10 (a lower minor, higher rev) is refused" test "$(m b a100-80-535-86-10)" = False
check "b: a T4 (7.5) on a new driver is refused: no sm_75 kernels" test "$(m b t4-570-124-06)" = False
check "b: a node without GFD labels is refused" test "$(m b a100-80-550-54-15-nogfd)" = False
check "d: a two-part driver 550.120 is admitted by a two-part floor 550.54" test "$(m d l40s-550-120)" = True
check "a: the MIG 1g.5gb slice (4864 MiB) is refused for 40Gi" test "$(m a a100-40-mig-single-550-54-15)" = False
check "a: an A100 40GB (40960 MiB) on driver 570 is admitted for 40Gi" test "$(m a a100-40-570-86-15)" = True

# Newer GFD's driver-version keys instead of cuda.driver.*.
"$PI" render k8s-job b.yaml --image "$(ref b)" --facts oci:img-b:v1 -o job-b-new.yaml \
  --gfd-label driver.major=nvidia.com/cuda.driver-version.major \
  --gfd-label driver.minor=nvidia.com/cuda.driver-version.minor \
  --gfd-label driver.rev=nvidia.com/cuda.driver-version.revision 2>/dev/null
"${AFFINITY[@]}" job-b-new.yaml "$NODES" >match-b-new.json
check "--gfd-label: the node with only the new driver-version labels is admitted" \
  "$PY" -c 'import json; assert json.load(open("match-b-new.json"))["a100-80-570-172-08-newlabels"] is True'
check "--gfd-label: the keys are the ones given" grep -q 'nvidia.com/cuda.driver-version.revision' job-b-new.yaml
check "the affinity uses only Gt/Lt on driver labels (never In/NotIn/DoesNotExist)" "$PY" -c '
import yaml
for d in yaml.safe_load_all(open("job-a.yaml")):
    if d and d["kind"] == "Job":
        for t in d["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]:
            for e in t["matchExpressions"]:
                assert e["operator"] in ("Gt", "Lt"), e
            keys = [e["key"] for e in t["matchExpressions"]]
            assert "nvidia.com/gpu.memory" in keys and "nvidia.com/gpu.compute.major" in keys, keys'

# --gpu-type narrows to that GPU's exact compute capability; --gpu-product pins values.
"$PI" render k8s-job b.yaml --image "$(ref b)" --facts oci:img-b:v1 --gpu-type A100 -o job-b-a100.yaml 2>/dev/null
"${AFFINITY[@]}" job-b-a100.yaml "$NODES" >match-b-a100.json
check "--gpu-type A100: only A100 nodes with a new enough driver" "$PY" -c '
import json
m = json.load(open("match-b-a100.json")); ok = [n for n, v in m.items() if v]
assert ok and all(n.startswith("a100") for n in ok), ok
assert "h100-550-54-15" not in ok'
"$PI" render k8s-job b.yaml --image "$(ref b)" --facts oci:img-b:v1 --gpu-product NVIDIA-H100-80GB-HBM3 -o job-b-h100.yaml 2>/dev/null
"${AFFINITY[@]}" job-b-h100.yaml "$NODES" >match-b-h100.json
check "--gpu-product NVIDIA-H100-80GB-HBM3: only H100 nodes" "$PY" -c '
import json
m = json.load(open("match-b-h100.json")); ok = [n for n, v in m.items() if v]
assert ok and all(n.startswith("h100") for n in ok), ok'

# --- the job itself ------------------------------------------------------------------------
check "the job: GPU limits, shm, checkpoint claim, FLAGS_/NCCL_ env, restart and failure policy" "$PY" -c '
import yaml
d = [x for x in yaml.safe_load_all(open("job-a.yaml")) if x][0]
s = d["spec"]; p = s["template"]["spec"]; c = p["containers"][0]
assert c["image"].startswith("registry.example.com/team/a@sha256:")
assert c["resources"]["limits"]["nvidia.com/gpu"] == "2" and c["resources"]["requests"]["cpu"] == "8"
env = {e["name"]: e["value"] for e in c["env"]}
assert env["FLAGS_fraction_of_gpu_memory_to_use"] == "0.9" and env["NCCL_DEBUG"] == "WARN" and "UNRELATED" not in env
assert env["CHECKPOINT_DIR"] == "/checkpoints"
v = {x["name"]: x for x in p["volumes"]}
assert v["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}
assert v["checkpoints"]["persistentVolumeClaim"]["claimName"] == "a-train-checkpoints"
assert p["restartPolicy"] == "Never" and s["backoffLimit"] == 3
assert s["podFailurePolicy"]["rules"][0] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
assert p["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]'
"$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --gpus 8 --shm-size 64Gi --cpu 48 \
  --memory 400Gi --checkpoint-pvc ocr-ckpt --checkpoint-path /data/ckpt --env NCCL_DEBUG=INFO \
  --toleration pool=gpu:NoExecute --node-selector nodepool=a100 --namespace training --name ocr \
  --service-account trainer --backoff-limit 6 -o job-flags.yaml 2>/dev/null
check "the flags reach the job and it stays valid" bash -c "'${VALIDATE[0]}' '${VALIDATE[1]}' job-flags.yaml && '$PY' -c '
import yaml
d = [x for x in yaml.safe_load_all(open(\"job-flags.yaml\")) if x][0]
p = d[\"spec\"][\"template\"][\"spec\"]; c = p[\"containers\"][0]
assert d[\"metadata\"] == {\"name\": \"ocr\", \"namespace\": \"training\", \"labels\": d[\"metadata\"][\"labels\"]}
assert c[\"resources\"][\"requests\"][\"memory\"] == \"400Gi\" and c[\"resources\"][\"limits\"][\"nvidia.com/gpu\"] == \"8\"
assert {e[\"name\"]: e[\"value\"] for e in c[\"env\"]}[\"NCCL_DEBUG\"] == \"INFO\"
assert p[\"nodeSelector\"] == {\"nodepool\": \"a100\"} and p[\"serviceAccountName\"] == \"trainer\"
assert p[\"tolerations\"] == [{\"key\": \"pool\", \"operator\": \"Equal\", \"value\": \"gpu\", \"effect\": \"NoExecute\"}]
assert d[\"spec\"][\"backoffLimit\"] == 6'"

# --- distributed ---------------------------------------------------------------------------
"$PI" render paddle-distributed a.yaml --image "$(ref a)" --facts oci:img-a:v1 --workers 4 --gpus-per-worker 8 \
  --name ocr-dist -o dist.yaml 2>/dev/null
check "paddle-distributed: Service + Indexed Job valid against the schemas" "${VALIDATE[@]}" dist.yaml
check "paddle-distributed: headless Service as subdomain, 4 indexed workers, launch wired to worker 0" "$PY" -c '
import yaml
docs = [x for x in yaml.safe_load_all(open("dist.yaml")) if x]
svc = [d for d in docs if d["kind"] == "Service"][0]; job = [d for d in docs if d["kind"] == "Job"][0]
assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
s = job["spec"]; p = s["template"]["spec"]
assert s["completionMode"] == "Indexed" and s["completions"] == 4 and s["parallelism"] == 4
assert p["subdomain"] == svc["metadata"]["name"] == "ocr-dist"
assert svc["spec"]["selector"].items() <= s["template"]["metadata"]["labels"].items()
cmd = p["containers"][0]["command"]
assert cmd[:3] == ["python3", "-m", "paddle.distributed.launch"], cmd
assert "--master=ocr-dist-0.ocr-dist:36000" in cmd and "--nnodes=4" in cmd and "--nproc_per_node=8" in cmd
assert "--rank=$(JOB_COMPLETION_INDEX)" in cmd and cmd[-3:] == ["/app/train.py", "--epochs", "3"], cmd
assert p["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
assert "affinity" in p'
"$PI" render paddle-distributed a.yaml --image "$(ref a)" --facts oci:img-a:v1 --workers 3 --format paddlejob -o pj.yaml 2>/dev/null
check "--format paddlejob: a PaddleJob valid against paddle-operator's field list" "${VALIDATE[@]}" pj.yaml
check "... with 3 worker replicas and the affinity in the worker template" "$PY" -c '
import yaml
d = [x for x in yaml.safe_load_all(open("pj.yaml")) if x][0]
assert d["apiVersion"] == "batch.paddlepaddle.org/v1" and d["kind"] == "PaddleJob"
w = d["spec"]["worker"]; assert w["replicas"] == 3
assert "nodeAffinity" in w["template"]["spec"]["affinity"]'
check "--train-arg replaces the script" bash -c "'$PI' render paddle-distributed a.yaml --image '$(ref a)' --facts oci:img-a:v1 --train-arg tools/train.py --train-arg=-c --train-arg configs/det.yml 2>/dev/null | grep -A2 '\"tools/train.py\"' | grep -q configs/det.yml"

# --- golden files (the digest is reproducible: scratch base, fixed epoch) -------------------
for f in job-a dist; do
  sed "s|$(cat a.digest)|sha256:DIGEST|g" "$f.yaml" >"$f.norm.yaml"
  if [[ "${UPDATE_GOLDEN:-0}" == 1 ]]; then cp "$f.norm.yaml" "$GOLDEN/k8s-$f.yaml"; fi
  check "$f matches the golden file" diff -u "$GOLDEN/k8s-$f.yaml" "$f.norm.yaml"
done

# --- --json --------------------------------------------------------------------------------
"$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --json >render.json 2>/dev/null
check "--json: objects, scheduling facts and the text" "$PY" -c '
import json
j = json.load(open("render.json"))
assert j["kind"] == "k8s-job" and j["objects"][0]["kind"] == "Job" and j["text"].startswith("# Rendered")
s = j["scheduling"]
assert s["driver_min"] == "560.28.03" and s["archs"] == ["sm_75", "sm_80", "sm_86", "sm_90"] and s["gpu_memory_mib"] == 40960
assert s["compute_capabilities"] == [">=7.5", ">=8.0", ">=9.0"], s'

# --- facts from the registry the image is pushed to -------------------------------------------
registry_start open open "$WORK/reg"
"$PI" push oci:img-b:v1 "$OPEN_HOST/team/b:v1" --insecure-registry "$OPEN_HOST" -q >/dev/null 2>&1
check "facts read from the registry give the same job as from the layout" bash -c "
  '$PI' render k8s-job b.yaml --image '$OPEN_HOST/team/b@$(cat b.digest)' --insecure-registry '$OPEN_HOST' 2>/dev/null >reg.yaml &&
  '$PI' render k8s-job b.yaml --image '$OPEN_HOST/team/b@$(cat b.digest)' --facts oci:img-b:v1 2>/dev/null >lay.yaml &&
  diff reg.yaml lay.yaml"
expect_fail "an image missing from the registry: exit 7 naming it" 7 "team/missing" \
  "$PI" render k8s-job b.yaml --image "$OPEN_HOST/team/missing@$(cat b.digest)" --insecure-registry "$OPEN_HOST" --retries 0

# --- the doctor's DaemonSet comes from the same place -------------------------------------------
"$PI" doctor --render daemonset --doctor-image reg.example.com/doctor:1 --node-selector nvidia.com/gpu.present=true \
  --image oci:img-a:v1 >ds.yaml
check "the doctor DaemonSet is valid against the schemas" "${VALIDATE[@]}" ds.yaml

# --- bad input ---------------------------------------------------------------------------------
expect_fail "unknown kind: did you mean" 2 "did you mean 'k8s-job'" "$PI" render k8s-jobs a.yaml --image "$(ref a)"
expect_fail "tag-only image refused with the fix" 2 "names a tag, not a digest.*|allow-tag" \
  "$PI" render k8s-job a.yaml --image registry.example.com/team/a:v1 --facts oci:img-a:v1
check "--allow-tag accepts it" bash -c "'$PI' render k8s-job a.yaml --image registry.example.com/team/a:v1 --facts oci:img-a:v1 --allow-tag >/dev/null 2>&1"
expect_fail "a GPU the image has no kernels for: exit 2 with the fix" 2 "no kernels for T4" \
  "$PI" render k8s-job b.yaml --image "$(ref b)" --facts oci:img-b:v1 --gpu-type T4
expect_fail "... the same for a GFD product" 2 "no kernels for" \
  "$PI" render k8s-job b.yaml --image "$(ref b)" --facts oci:img-b:v1 --gpu-product Tesla-T4
expect_fail "... and for a product node selector" 2 "no kernels for" \
  "$PI" render k8s-job b.yaml --image "$(ref b)" --facts oci:img-b:v1 --node-selector nvidia.com/gpu.product=Tesla-V100-SXM2-16GB
expect_fail "unknown GPU type: did you mean (a bad flag value, exit 2)" 2 "did you mean" \
  "$PI" render k8s-job b.yaml --image "$(ref b)" --facts oci:img-b:v1 --gpu-type A1000
expect_fail "zero GPUs" 2 "needs 1 to 64 GPUs" "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --gpus 0
expect_fail "a negative GPU count is refused, not read as the default" 2 "--gpus -1: a GPU training pod needs 1 to 64 GPUs" "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --gpus -1
expect_fail "--no-gpu-affinity with --gpu-type conflict" 2 "conflicts with --no-gpu-affinity" \
  "$PI" render k8s-job a.yaml --image "$(ref a)" --no-gpu-affinity --gpu-type A100
expect_fail "--workers is for paddle-distributed" 2 "is for paddle-distributed" \
  "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --workers 4
expect_fail "--gpus is for k8s-job" 2 "is for k8s-job" \
  "$PI" render paddle-distributed a.yaml --image "$(ref a)" --facts oci:img-a:v1 --gpus 4
expect_fail "k8s flags on a Dockerfile render" 2 "is for k8s-job and paddle-distributed" \
  "$PI" render dockerfile a.yaml --gpus 2
expect_fail "unknown --format: did you mean" 2 "did you mean 'paddlejob'" \
  "$PI" render paddle-distributed a.yaml --image "$(ref a)" --facts oci:img-a:v1 --format paddlejobs
expect_fail "--facts of another image than --image: exit 3" 3 "but --image pins" \
  "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-b:v1
make_spec plain '  {}'
"$PI" build plain.yaml -q -o oci:plain:v1 --digest-file plain.digest >/dev/null
expect_fail "an image without GPU facts: exit 3 naming --no-gpu-affinity" 3 "no-gpu-affinity" \
  "$PI" render k8s-job plain.yaml --image "$(ref plain)" --facts oci:plain:v1
check "--no-gpu-affinity renders it without affinity" bash -c "'$PI' render k8s-job plain.yaml --image '$(ref plain)' --no-gpu-affinity 2>/dev/null | grep -qv nodeAffinity"
expect_fail "a bad --gfd-label name: did you mean" 2 "did you mean 'driver.rev'" \
  "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --gfd-label driver.revision=x.io/rev
expect_fail "a bad toleration effect: did you mean" 2 "did you mean 'NoSchedule'" \
  "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --toleration nvidia.com/gpu:NoSchedul
expect_fail "a bad --shm-size" 2 "shm-size '16GB' is not a memory quantity" \
  "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --shm-size 16GB
expect_fail "a job name that is not a DNS label" 2 "not a Kubernetes job name" \
  "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --name Ocr_Train
expect_fail "a node selector value with a newline or quote cannot reach the YAML" 2 "not a Kubernetes label value" \
  "$PI" render k8s-job a.yaml --image "$(ref a)" --facts oci:img-a:v1 --node-selector 'pool=a"b'
expect_fail "requires.gpu_memory that is not a quantity: file, line and field" 3 "bad.yaml:[0-9]+:[0-9]+: requires.gpu_memory" \
  bash -c "sed 's/gpu_memory: 40Gi/gpu_memory: lots/' a.yaml >bad.yaml && '$PI' build bad.yaml -o oci:bad:v1"
check "--env values with quotes and newlines stay inside their YAML string" bash -c "
  '$PI' render k8s-job a.yaml --image '$(ref a)' --facts oci:img-a:v1 --env \$'NOTE=a: \"b\"\\nc' -o env.yaml 2>/dev/null &&
  '$PY' -c 'import yaml; d=[x for x in yaml.safe_load_all(open(\"env.yaml\")) if x][0]; e={x[\"name\"]:x[\"value\"] for x in d[\"spec\"][\"template\"][\"spec\"][\"containers\"][0][\"env\"]}; assert e[\"NOTE\"]==\"a: \\\"b\\\"\\nc\", e'"
finish
