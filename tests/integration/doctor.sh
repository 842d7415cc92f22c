#!/usr/bin/env bash
# `paddle-image doctor` against fixture hosts (tests/fixtures/hosts/<scenario>) with the
# fake NVML/libcuda built here, found through a real `ldconfig -r` cache; golden text
# and JSON per scenario (UPDATE_GOLDEN=1 rewrites them); the real GPU-less machine;
# image checks; timeout; render/aggregate; the doctor image built by paddle-image.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
cd "$WORK"
HOSTS=$ROOT/tests/fixtures/hosts
gcc -shared -fPIC -O1 -Wall -Werror -Wl,-soname,libnvidia-ml.so.1 -o fake-nvml.so "$SUPPORT/fakegpu/fake_nvml.c"
gcc -shared -fPIC -O1 -Wall -Werror -Wl,-soname,libcuda.so.1 -o fake-cuda.so "$SUPPORT/fakegpu/fake_cuda.c"

doctor_on() { # SCENARIO [ARGS...] -> runs the doctor on the prepared tree; exit code in $rc
  local s=$1; shift
  bash "$SUPPORT/prepare-host.sh" "$HOSTS/$s" "$WORK/h/$s" "$WORK/fake-nvml.so" "$WORK/fake-cuda.so" >/dev/null
  rc=0
  PI_FAKE_GPU_SCENARIO="$WORK/h/$s/scenario.conf" "$PI" doctor --root "$WORK/h/$s/root" --timeout 5 "$@" >"$WORK/$s.out" 2>"$WORK/$s.err" || rc=$?
}
status_of() { # SCENARIO CHECK-ID -> status from the JSON run
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print({c["id"]:c["status"] for c in j["checks"]}.get(sys.argv[2],"absent"))' "$WORK/$1.json" "$2"
}
expect() { # SCENARIO CHECK STATUS
  local got; got=$(status_of "$1" "$2")
  check "$1: $2 is $3" test "$got" = "$3"
}
golden() { # SCENARIO: compare normalised text and JSON with the stored golden files
  local s=$1 dir=$HOSTS/$1
  sed "s|$WORK/h/$s/root|<ROOT>|g" "$WORK/$s.out" >"$WORK/$s.txt.norm"
  python3 - "$WORK/$s.json" "$WORK/h/$s/root" >"$WORK/$s.json.norm" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
text = json.dumps({"checks": j["checks"], "summary": j["summary"]}, indent=1, sort_keys=True)
print(text.replace(sys.argv[2], "<ROOT>"))
PY
  if [[ "${UPDATE_GOLDEN:-0}" == 1 ]]; then
    cp "$WORK/$s.txt.norm" "$dir/expected.txt"
    cp "$WORK/$s.json.norm" "$dir/expected.json"
  fi
  check "$s: text output matches the golden file" diff -u "$dir/expected.txt" "$WORK/$s.txt.norm"
  check "$s: JSON output matches the golden file" diff -u "$dir/expected.json" "$WORK/$s.json.norm"
}
run_scenario() { # SCENARIO [ARGS...]
  local s=$1; shift
  doctor_on "$s" "$@"
  local text_rc=$rc
  cp "$WORK/$s.out" "$WORK/$s.text"
  doctor_on "$s" --json "$@"
  cp "$WORK/$s.out" "$WORK/$s.json"
  mv "$WORK/$s.text" "$WORK/$s.out"
  rc=$text_rc
  golden "$s"
}

run_scenario healthy-8xh100
check "healthy-8xh100: exit 0" test "$rc" = 0
for id in driver.module driver.version driver.uvm driver.devices libs.found libs.version nvml.init cuda.init gpu.health mig.consistency fabric.manager runtime.docker runtime.containerd runtime.toolkit runtime.cdi; do
  expect healthy-8xh100 "$id" PASS
done
check "healthy-8xh100: NVML saw 8 H100s" python3 -c '
import json,sys; g=json.load(open(sys.argv[1]))["facts"]["nvml"]["gpus"]; assert len(g)==8 and all(x["cc"]=="9.0" and "H100" in x["name"] for x in g)' "$WORK/healthy-8xh100.json"
check "healthy-8xh100: libraries found through ld.so.cache" grep -q "via ld.so.cache" "$WORK/healthy-8xh100.out"

run_scenario nvswitch-no-fm
check "nvswitch-no-fm: exit 10" test "$rc" = 10
expect nvswitch-no-fm fabric.manager FAIL
expect nvswitch-no-fm cuda.init FAIL
check "nvswitch-no-fm: names error 802" grep -q "802" "$WORK/nvswitch-no-fm.out"

run_scenario driver470-cuda12-image --requires cuda=12.6,sm=80
expect driver470-cuda12-image driver.version PASS
expect driver470-cuda12-image image.cuda-driver FAIL
expect driver470-cuda12-image image.gpu-arch PASS
check "driver470: says the driver is insufficient and the minimum" grep -q "CUDA driver version is insufficient.*" "$WORK/driver470-cuda12-image.out"

run_scenario module-lib-mismatch
expect module-lib-mismatch libs.version FAIL
expect module-lib-mismatch nvml.init FAIL
check "module-lib-mismatch: explains NVML 18" grep -q "returned 18" "$WORK/module-lib-mismatch.out"

run_scenario nvml-999-container
expect nvml-999-container nvml.init FAIL
expect nvml-999-container runtime.cgroup-devices FAIL

run_scenario uvm-missing
expect uvm-missing driver.uvm FAIL
expect uvm-missing driver.devices FAIL

run_scenario mig-no-instances
expect mig-no-instances mig.consistency FAIL
expect mig-no-instances kernel.xid WARN
check "the Xid line is quoted" grep -q "Xid (PCI:0000:07:00): 48" "$WORK/mig-no-instances.out"

run_scenario geforce-forward-compat-804
expect geforce-forward-compat-804 cuda.init FAIL
check "804 is explained" grep -q "forward compatibility works only on data-center GPUs" "$WORK/geforce-forward-compat-804.out"

run_scenario containerd-no-nvidia-runtime
expect containerd-no-nvidia-runtime runtime.containerd FAIL

run_scenario stale-cdi
expect stale-cdi runtime.cdi FAIL

run_scenario no-driver
check "no-driver: a clean report, exit 10" test "$rc" = 10
expect no-driver driver.module FAIL
expect no-driver nvml.init SKIP

run_scenario two-part-driver
expect two-part-driver driver.version PASS
check "two-part driver version read (550.120, nvidia-frontend)" bash -c "grep -q '550.120' '$WORK/two-part-driver.out' && grep -q '195 nvidia-frontend' '$WORK/two-part-driver.out'"
expect two-part-driver runtime.containerd PASS

run_scenario gh200-aarch64
expect gh200-aarch64 driver.version PASS

# A real machine replayed: one NVIDIA H200 in a Firecracker VM, open module 580.159.04,
# the driver on a read-only mount at /usr/local/nvidia (tests/fixtures/hosts/README.md).
# The fakes answer what NVML and the CUDA driver answered there; the verdicts are the
# ones the real run gave (scripts/gpu/real-gpu.sh), fabric.manager after its fix.
run_scenario h200-vm-580
check "h200-vm-580: exit 0" test "$rc" = 0
for id in driver.module driver.version driver.uvm driver.devices libs.found libs.version nvml.init cuda.init \
  gpu.health gpu.persistence mig.consistency; do
  expect h200-vm-580 "$id" PASS
done
for id in fabric.manager runtime.docker runtime.containerd runtime.crio runtime.toolkit runtime.cdi \
  runtime.cgroup-devices kernel.xid; do
  expect h200-vm-580 "$id" SKIP
done
check "h200-vm-580: the nvidia-nvswitch major alone is no NVSwitch" \
  grep -q "registered by the driver with or without switches" "$WORK/h200-vm-580.out"
check "h200-vm-580: libraries found in /usr/local/nvidia/lib64 with no ld.so.cache entry (GKE)" \
  grep -q "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04 via directory scan" "$WORK/h200-vm-580.out"
check "h200-vm-580: every probe reading equals nvidia-smi's on the real machine" \
  python3 "$SUPPORT/compare_nvidia_smi.py" "$WORK/h200-vm-580.json" "$HOSTS/h200-vm-580/nvidia-smi.xml" \
  "$HOSTS/h200-vm-580/nvidia-smi-fields.csv"
# With the mount listed in ld.so.conf.d (as on that machine), the cache finds them.
echo /usr/local/nvidia/lib64 >"$WORK/h/h200-vm-580/root/etc/ld.so.conf.d/zz-nvidia.conf"
ldconfig -r "$WORK/h/h200-vm-580/root"
check "h200-vm-580: through ld.so.cache when ld.so.conf.d lists /usr/local/nvidia/lib64" bash -c \
  "PI_FAKE_GPU_SCENARIO='$WORK/h/h200-vm-580/scenario.conf' '$PI' doctor --root '$WORK/h/h200-vm-580/root' |
   grep -q '/usr/local/nvidia/lib64/libcuda.so.580.159.04 via ld.so.cache'"
# The comparison itself catches a reading that differs.
sed 's/<uuid>GPU-3/<uuid>GPU-4/' "$HOSTS/h200-vm-580/nvidia-smi.xml" >smi-other.xml
expect_fail "compare_nvidia_smi.py reports a UUID that differs" 1 "" \
  python3 "$SUPPORT/compare_nvidia_smi.py" "$WORK/h200-vm-580.json" smi-other.xml "$HOSTS/h200-vm-580/nvidia-smi-fields.csv"
# The images of the real run (scripts/gpu/expected.tsv), against the replayed host:
# the verdicts written before that run, which it gave.
bash "$ROOT/scripts/gpu/images.sh" "$PI" "$WORK/gpuimg"
while IFS=$'\t' read -r tag _req id want; do
  [[ -z "$tag" || "$tag" == \#* ]] && continue
  if [[ ! -f "gpu-$tag.json" ]]; then
    PI_FAKE_GPU_SCENARIO="$WORK/h/h200-vm-580/scenario.conf" "$PI" doctor --root "$WORK/h/h200-vm-580/root" \
      --image "oci:$WORK/gpuimg:$tag" --json >"gpu-$tag.json" || true
  fi
  got=$(python3 -c 'import json,sys; print({c["id"]:c["status"] for c in json.load(open(sys.argv[1]))["checks"]}.get(sys.argv[2],"absent"))' "gpu-$tag.json" "$id")
  check "h200-vm-580 --image $tag: $id is $want" test "$got" = "$want"
done <"$ROOT/scripts/gpu/expected.tsv"
# Fabric completed on every GPU but Fabric Manager not in /proc (a pod without hostPID): WARN.
doctor_on healthy-8xh100
rm -rf "$WORK/h/healthy-8xh100/root/proc/1234"
PI_FAKE_GPU_SCENARIO="$WORK/h/healthy-8xh100/scenario.conf" "$PI" doctor --root "$WORK/h/healthy-8xh100/root" --json \
  >"$WORK/fm-hidden.json" || true
expect fm-hidden fabric.manager WARN

# Image checks from a real image's labels (base: auto facts) and an arch mismatch.
mkdir -p img/app && echo x >img/app/x
cat >img/spec.yaml <<'YAML'
image: {tags: [v1]}
requires: {cuda: "12.6", driver_min: "560.28.03", gpu_archs: [sm_80, sm_86]}
layers:
  - name: app
    files: [{from: app/, to: /app/}]
config:
  env: {NVIDIA_REQUIRE_CUDA: "cuda>=12.6 brand=tesla,driver>=470,driver<471"}
YAML
"$PI" build img/spec.yaml -q -o oci:img-layout:v1 -o docker-archive:img.tar >/dev/null
doctor_on healthy-8xh100 --image oci:img-layout:v1 --json
cp "$WORK/healthy-8xh100.out" "$WORK/img.json"
check "image on H100/550: driver WARN (minor-version), arch FAIL (no sm_90), require-cuda FAIL (12.4 < 12.6)" python3 -c '
import json,sys; s={c["id"]:c["status"] for c in json.load(open(sys.argv[1]))["checks"]}
assert s["image.cuda-driver"]=="WARN" and s["image.gpu-arch"]=="FAIL" and s["image.require-cuda"]=="FAIL", s' "$WORK/img.json"
doctor_on healthy-8xh100 --image docker-archive:img.tar --json
check "docker-archive images are read too" grep -q '"image.gpu-arch"' "$WORK/healthy-8xh100.out"
doctor_on healthy-8xh100 --image oci:img-layout:v1 --scan-layers --json
check "--scan-layers adds the layer checks" python3 -c '
import json,sys; s={c["id"]:c["status"] for c in json.load(open(sys.argv[1]))["checks"]}
assert s["image.driver-files"]=="PASS" and s["image.forward-compat"]=="PASS", s' "$WORK/healthy-8xh100.out"

# An image that ships driver files and forces a cuda-compat libcuda, on a GeForce card.
mkdir -p bad/root/usr/lib/x86_64-linux-gnu bad/root/usr/local/cuda-12.6/compat bad/root/etc/ld.so.conf.d
echo fake >bad/root/usr/lib/x86_64-linux-gnu/libcuda.so.535.129.03
echo fake >bad/root/usr/local/cuda-12.6/compat/libcuda.so.560.28.03
echo /usr/local/cuda-12.6/compat >bad/root/etc/ld.so.conf.d/000-cuda-compat.conf
cat >bad/spec.yaml <<'YAML'
image: {tags: [v1]}
requires: {cuda: "12.6", gpu_archs: [sm_89]}
layers:
  - name: files
    files: [{from: root/, to: /}]
YAML
"$PI" build bad/spec.yaml -q -o oci:bad-img:v1 >/dev/null
doctor_on geforce-forward-compat-804 --image oci:bad-img:v1 --scan-layers --json
check "driver files in the image and a forced compat libcuda on GeForce are FAILs" python3 -c '
import json,sys; s={c["id"]:(c["status"],c["evidence"]) for c in json.load(open(sys.argv[1]))["checks"]}
assert s["image.driver-files"][0]=="FAIL" and "libcuda.so.535.129.03" in s["image.driver-files"][1], s["image.driver-files"]
assert s["image.forward-compat"][0]=="FAIL" and "804" in s["image.forward-compat"][1], s["image.forward-compat"]' "$WORK/geforce-forward-compat-804.out"

# The layers are read as a container sees them: an upper layer that whites out the
# driver library and the compat configuration leaves nothing to report.
/usr/bin/python3 - bad-img <<'PY'
import gzip, hashlib, io, json, sys, tarfile
d = sys.argv[1]
blob = lambda dg: d + "/blobs/sha256/" + dg[7:]
def put(b):
    h = hashlib.sha256(b).hexdigest()
    open(d + "/blobs/sha256/" + h, "wb").write(b)
    return "sha256:" + h, len(b)
idx = json.load(open(d + "/index.json"))
m = json.load(open(blob(idx["manifests"][0]["digest"])))
cfg = json.load(open(blob(m["config"]["digest"])))
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
    for p in ("usr/lib/x86_64-linux-gnu/.wh.libcuda.so.535.129.03", "etc/ld.so.conf.d/.wh.000-cuda-compat.conf"):
        t.addfile(tarfile.TarInfo(p), io.BytesIO(b""))
layer = gzip.compress(raw.getvalue(), mtime=0)
ld, ls = put(layer)
m["layers"].append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": ld, "size": ls})
cfg["rootfs"]["diff_ids"].append("sha256:" + hashlib.sha256(raw.getvalue()).hexdigest())
cd, cs = put(json.dumps(cfg).encode())
m["config"]["digest"], m["config"]["size"] = cd, cs
md, ms = put(json.dumps(m).encode())
idx["manifests"].append({"mediaType": m.get("mediaType", "application/vnd.oci.image.manifest.v1+json"),
                         "digest": md, "size": ms, "annotations": {"org.opencontainers.image.ref.name": "v2"}})
json.dump(idx, open(d + "/index.json", "w"))
PY
doctor_on geforce-forward-compat-804 --image oci:bad-img:v2 --scan-layers --json
check "a driver library and compat configuration whited out in an upper layer are not reported" python3 -c '
import json,sys; s={c["id"]:(c["status"],c["evidence"]) for c in json.load(open(sys.argv[1]))["checks"]}
assert "libcuda.so.535.129.03" not in s["image.driver-files"][1], s["image.driver-files"]
assert s["image.forward-compat"][0]!="FAIL" or "ld.so.conf" not in s["image.forward-compat"][1], s["image.forward-compat"]' "$WORK/geforce-forward-compat-804.out"

# Without ld.so.cache the libraries are still found in the library directories.
cp -a "$WORK/h/healthy-8xh100" "$WORK/h/nocache" && rm "$WORK/h/nocache/root/etc/ld.so.cache"
rc=0; PI_FAKE_GPU_SCENARIO="$WORK/h/nocache/scenario.conf" "$PI" doctor --root "$WORK/h/nocache/root" >nocache.out || rc=$?
check "libraries found by directory scan when ld.so.cache is missing" grep -q "via directory scan" nocache.out
check "... and NVML still initialises" grep -q "^PASS  nvml.init" nocache.out

# Colour only on a terminal, and never with NO_COLOR.
PI_FAKE_GPU_SCENARIO="$WORK/h/healthy-8xh100/scenario.conf" script -qec "env -u CI '$PI' doctor --root '$WORK/h/healthy-8xh100/root'" /dev/null >tty.out || true
PI_FAKE_GPU_SCENARIO="$WORK/h/healthy-8xh100/scenario.conf" script -qec "env -u CI NO_COLOR=1 '$PI' doctor --root '$WORK/h/healthy-8xh100/root'" /dev/null >nocolor.out || true
check "colour on a terminal" grep -q $'\e\[32mPASS' tty.out
check "no colour with NO_COLOR" bash -c "! grep -q \$'\\e\\[3' nocolor.out && grep -q PASS nocolor.out"
check "no colour when piped" bash -c "! grep -q \$'\\e\\[' '$WORK/healthy-8xh100.out'"

# A hanging cuInit is cut off by the timeout and reported, not waited for.
sed 's/^cuda.hang.*//; $a cuda.hang = 1' "$HOSTS/healthy-8xh100/scenario.conf" >hang.conf
bash "$SUPPORT/prepare-host.sh" "$HOSTS/healthy-8xh100" "$WORK/h/hang" "$WORK/fake-nvml.so" "$WORK/fake-cuda.so" >/dev/null
rc=0; PI_FAKE_GPU_SCENARIO="$WORK/hang.conf" timeout 60 "$PI" doctor --root "$WORK/h/hang/root" --timeout 1 --json >hang.json || rc=$?
check "a hanging cuInit becomes a FAIL after --timeout" python3 -c '
import json,sys; s={c["id"]:(c["status"],c["evidence"]) for c in json.load(open("hang.json"))["checks"]}
assert s["cuda.init"][0]=="FAIL" and "did not return within 1000 ms" in s["cuda.init"][1], s["cuda.init"]'

# --nvml-lib / --cuda-lib override the lookup.
rc=0; PI_FAKE_GPU_SCENARIO="$WORK/h/healthy-8xh100/scenario.conf" "$PI" doctor --root "$WORK/h/no-driver/root" \
  --nvml-lib "$WORK/fake-nvml.so" --cuda-lib "$WORK/fake-cuda.so" --json >override.json || rc=$?
check "--nvml-lib/--cuda-lib load the named libraries" python3 -c '
import json; s={c["id"]:c["status"] for c in json.load(open("override.json"))["checks"]}
assert s["nvml.init"]=="PASS" and s["cuda.init"]=="PASS", s'

# This real machine has no GPU: a clean report, never a crash.
rc=0; "$PI" doctor --root / --json >real.json || rc=$?
check "doctor --root / on this GPU-less machine: valid JSON, exit 0 or 10" python3 -c '
import json; j=json.load(open("real.json")); assert len(j["checks"])>=15' 
check "... and the exit code is 0 or 10" bash -c "test $rc = 0 -o $rc = 10"
expect_fail "--strict fails on warnings" 10 "" "$PI" doctor --root "$WORK/h/geforce-forward-compat-804/root" --strict
expect_fail "a missing --root is a usage error" 2 "is not a directory" "$PI" doctor --root /nonexistent
expect_fail "bad --requires" 2 "unknown key 'cudaa'" "$PI" doctor --requires cudaa=12

# Bad input never crashes: garbage /proc files, malformed configs, unreadable files.
cp -a "$WORK/h/healthy-8xh100" "$WORK/h/garbage"
head -c 3000 /dev/urandom >"$WORK/h/garbage/root/proc/driver/nvidia/version"
head -c 3000 /dev/urandom >"$WORK/h/garbage/root/proc/devices"
printf 'not = [valid toml\n' >"$WORK/h/garbage/root/etc/containerd/config.toml"
printf '{"runtimes": ' >"$WORK/h/garbage/root/etc/docker/daemon.json"
head -c 5000 /dev/urandom >"$WORK/h/garbage/root/etc/ld.so.cache"
rm "$WORK/h/garbage/root/proc/modules" && mkdir "$WORK/h/garbage/root/proc/modules" # unreadable: EISDIR
rc=0; PI_FAKE_GPU_SCENARIO="$WORK/h/garbage/scenario.conf" "$PI" doctor --root "$WORK/h/garbage/root" --json >garbage.json 2>garbage.err || rc=$?
check "garbage host files: exit 10, not a crash" test "$rc" = 10
check "garbage: each broken input is a FAIL or SKIP with evidence" python3 -c '
import json; s={c["id"]:(c["status"],c["evidence"]) for c in json.load(open("garbage.json"))["checks"]}
assert s["runtime.containerd"][0]=="FAIL" and "malformed TOML" in s["runtime.containerd"][1], s["runtime.containerd"]
assert s["runtime.docker"][0]=="FAIL" and "malformed JSON" in s["runtime.docker"][1], s["runtime.docker"]
assert s["driver.version"][0]=="FAIL", s["driver.version"]
assert "Is a directory" in s["driver.module"][1], s["driver.module"]'

# Fleet: render and aggregate.
"$PI" doctor --render daemonset --doctor-image reg.example.com/doctor:1 --node-selector nvidia.com/gpu.present=true --image oci:img-layout:v1 >ds.yaml
check "DaemonSet mounts / read-only and passes the image needs" bash -c "grep -q 'readOnly: true' ds.yaml && grep -q 'cuda=12.6' ds.yaml && grep -q 'nvidia.com/gpu.present: \"true\"' ds.yaml && grep -q 'reg.example.com/doctor:1' ds.yaml"
check "the DaemonSet is valid YAML with one container" python3 -c '
import yaml; d=yaml.safe_load(open("ds.yaml")); c=d["spec"]["template"]["spec"]["containers"]
assert d["kind"]=="DaemonSet" and len(c)==1 and "--root" in c[0]["command"]'
for s in healthy-8xh100 nvswitch-no-fm stale-cdi; do
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["node"]=sys.argv[2]; print(json.dumps(j))' "$WORK/$s.json" "node-$s"
done >nodes.jsonl
rc=0; "$PI" doctor aggregate --json <nodes.jsonl >agg.json || rc=$?
check "aggregate: exit 10 when a node failed" test "$rc" = 10
check "aggregate: which nodes fail which checks" python3 -c '
import json; a=json.load(open("agg.json"))
assert a["nodes"]==["node-healthy-8xh100","node-nvswitch-no-fm","node-stale-cdi"]
assert a["checks"]["fabric.manager"]["FAIL"]==["node-nvswitch-no-fm"] and a["checks"]["runtime.cdi"]["FAIL"]==["node-stale-cdi"]'
check "aggregate text output names nodes" bash -c "'$PI' doctor aggregate nodes.jsonl | grep -q 'FAIL  fabric.manager: node-nvswitch-no-fm'"

# The doctor image, built by paddle-image itself, runs the doctor with runc.
bash "$ROOT/examples/doctor/stage.sh" "$PI" >/dev/null
check "the doctor image builds from examples/doctor" "$PI" build "$ROOT/examples/doctor/spec.yaml" -q -o oci:doctor-img:latest
check "umoci unpacks it" umoci unpack --image doctor-img:latest doctor-bundle
out=$(run_in_bundle doctor-bundle /usr/local/bin/paddle-image doctor --root / --json 2>&1) || true
check "the packaged doctor runs in a container and prints its JSON" python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); assert "checks" in j' <<<"$out"
finish
