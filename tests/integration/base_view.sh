#!/usr/bin/env bash
# Building on a Paddle-shaped base (tests/support/make-paddle-base.py: Docker v2s2
# behind a manifest list, 16 layers on the Debian test rootfs, /tmp 1777, a 0750 home
# of uid 1000, CUDA behind /etc/alternatives links, merged /usr, whiteouts, an opaque
# directory, a hard link, setuid and xattr files, the NVIDIA ENV) pushed to a local
# registry with the distribution API alone:
# - `inspect --base-view` shows the tree after whiteouts and the facts it states;
# - a files layer writing to /tmp/warmup/, /home/paddle/work/, /usr/local/cuda/lib64/
#   and /lib/x86_64-linux-gnu/ keeps /tmp 1777 and the home 0750 paddle, writes through
#   the links, and never turns them into directories (checked in the layer's tar, then
#   by running the image with podman on the overlay storage driver as root and as uid
#   1000, and with containerd's overlayfs snapshotter on a private socket);
# - the layer is deterministic and its cache key covers the base entries it touched:
#   a base patched elsewhere reuses it, a base whose /home/paddle changed rebuilds it.
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
source "$SUPPORT/container.sh"
cd "$WORK"
[[ -d "$BASE_ROOTFS" ]] || { echo "missing fixture $BASE_ROOTFS (run scripts/test.sh)"; exit 1; }
cleanup() {
  registry_stop_all
  podman_cleanup 2>/dev/null || true
}
trap cleanup EXIT
registry_start reg open "$WORK/srv"
TAG=2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6
R=$REG_HOST/paddlepaddle/paddle
js() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2" "$1"; }

# ---- the bases --------------------------------------------------------------------
check "the Paddle-shaped base is generated and pushed" /usr/bin/python3 "$SUPPORT/make-paddle-base.py" pbase \
  "$BASE_ROOTFS" "$TAG" --push "$R"
check "... deterministically (same manifest digest twice)" bash -c \
  "diff <(/usr/bin/python3 '$SUPPORT/make-paddle-base.py' pbase2 '$BASE_ROOTFS' '$TAG') <(/usr/bin/python3 '$SUPPORT/make-paddle-base.py' pbase3 '$BASE_ROOTFS' '$TAG')"
/usr/bin/python3 "$SUPPORT/make-paddle-base.py" pextra "$BASE_ROOTFS" "$TAG-extra" --variant extra --push "$R" >/dev/null
/usr/bin/python3 "$SUPPORT/make-paddle-base.py" phome "$BASE_ROOTFS" "$TAG-home0700" --variant home0700 --push "$R" >/dev/null
check "skopeo reads it from the registry as a Docker manifest list" bash -c \
  "skopeo inspect --raw --tls-verify=false docker://$R:$TAG | grep -q 'manifest.list.v2+json'"

# ---- inspect --base-view ------------------------------------------------------------
check "inspect --base-view reads the base" bash -c "'$PI' inspect --base-view $R:$TAG --insecure >view.txt"
check "... and --json" bash -c "'$PI' inspect --base-view $R:$TAG --insecure --json >view.json"
check "the facts the base states: Python, glibc, CUDA from ENV, cuDNN, the Paddle distribution" bash -c \
  "grep -q '^Python: *\/usr\/bin\/python3.11' view.txt && grep -q '^glibc: *2.36' view.txt &&
   grep -q '^CUDA: *12.0.1 (ENV CUDA_VERSION)' view.txt && grep -q '^cuDNN: *8.9.1' view.txt &&
   grep -q 'paddlepaddle-gpu 2.6.1 */usr/local/lib/python3.11/dist-packages/paddlepaddle_gpu-2.6.1.dist-info *(pip)' view.txt"
check "directories that are not root's 0755, and the symlinked directories" bash -c \
  "grep -q '^  /tmp  1777 0:0' view.txt && grep -q '^  /home/paddle  0750 1000:1000' view.txt &&
   grep -q '^  /usr/local/cuda -> /etc/alternatives/cuda  (/usr/local/cuda-12.0)' view.txt && grep -q '^  /lib -> usr/lib' view.txt"
check "the tree after whiteouts and the opaque directory; links, setuid and xattrs kept" js view.json '
n = j["nodes"]
assert "opt/cache/old.bin" not in n and "opt/cache/sub" not in n and "opt/cache/new.bin" in n, "opaque"
assert "usr/local/cuda-12.0/bin/cuda-gdb-removed" not in n, "whiteout"
assert n["usr/local/bin/prun"]["t"] == "1" and n["usr/local/bin/prun"]["k"] == "usr/local/bin/paddle-run"
assert n["usr/local/bin/suidtool"]["m"] == 0o4755
assert "user.paddle" in n["usr/local/bin/tagged"]["x"]
assert n["home/paddle"]["o"]["uid"] == 1000 and n["home/paddle"]["m"] == 0o750
assert j["facts"]["cuda"] == "12.0.1" and [d["name"] for d in j["facts"]["python"]] == ["six", "opt-einsum", "paddlepaddle-gpu", "protobuf"]
assert len(j["layers"]) == 16, len(j["layers"])'

# ---- a layer written into it ----------------------------------------------------------
mkdir -p app/warmup app/work
echo 'det: 1' >app/warmup/det.yml
echo 'work' >app/work/notes.txt
echo 'warm' >app/warm.yml
echo 'y' >app/y
cat >app/spec.yaml <<YAML
image: {name: example.com/team/ocr, tags: [v1]}
base: $R:$TAG
layers:
  - name: app
    files:
      - {from: warmup/, to: /tmp/warmup/}
      - {from: work/, to: /home/paddle/work/, owner: "1000:1000"}
      - {from: warm.yml, to: /usr/local/cuda/lib64/warm.yml}
      - {from: y, to: /lib/x86_64-linux-gnu/y}
YAML
build() { # LAYOUT BASE_TAG LOG
  sed "s|^base: .*|base: $R:$2|" app/spec.yaml >app/spec-$2.yaml
  "$PI" build "app/spec-$2.yaml" -o "oci:$1:v1" --insecure-registry "$REG_HOST" --cache-dir "$WORK/cache" \
    --metadata-file "$3.json" >"$3.out" 2>"$3.err"
}
check "the app builds on the base" build app1 "$TAG" b1
check "the labels carry what the base states, with no requires: in the spec" bash -c \
  "'$PI' inspect oci:app1:v1 --json | /usr/bin/python3 -c 'import json,sys; l=json.load(sys.stdin)[\"config\"][\"config\"][\"Labels\"]
want={\"cuda.version\": \"12.0\", \"cudnn.version\": \"8.9\", \"paddle.version\": \"2.6.1\", \"python.version\": \"3.11\"}
assert all(l.get(\"io.paddle-image.\"+k)==v for k,v in want.items()), l'"
check "... and the build says where each came from" bash -c \
  "grep -q 'io.paddle-image.cuda.version = 12.0 (from the base: ENV CUDA_VERSION)' b1.err &&
   grep -q 'io.paddle-image.paddle.version = 2.6.1 (from the base: /usr/local/lib/python3.11/dist-packages/paddlepaddle_gpu-2.6.1.dist-info)' b1.err"
{ cat "app/spec-$TAG.yaml"; printf 'requires: {cuda: "11.8"}\n'; } >app/spec-cuda118.yaml
expect_fail "requires: that contradicts the base is an input error naming both (exit 3)" 3 \
  'requires.cuda is "11.8", but the base states 12.0 \(ENV CUDA_VERSION\)' \
  "$PI" build app/spec-cuda118.yaml -q -o oci:x118:v1 --insecure-registry "$REG_HOST" --cache-dir "$WORK/cache"
check "a published Paddle image's tag (on a mirror) gives the driver floor and the GPU architectures from the matrix" bash -c \
  "'$PI' inspect oci:app1:v1 --json | /usr/bin/python3 -c 'import json,sys; l=json.load(sys.stdin)[\"config\"][\"config\"][\"Labels\"]
assert l[\"io.paddle-image.driver.min\"] == \"525.60.13\" and l[\"io.paddle-image.driver.min-compat\"] == \"525.60.13\", l
assert l[\"io.paddle-image.gpu.archs\"] == \"sm_60,sm_61,sm_70,sm_75,sm_80,sm_86,sm_89,sm_90\", l' &&
   grep -q 'is a published Paddle image the compatibility matrix knows (.*paddle.yaml:[0-9]*)' b1.err"
check "render k8s-job takes the image built on the base with no requires: (driver and archs from its labels)" bash -c \
  "'$PI' render k8s-job 'app/spec-$TAG.yaml' --image example.com/team/ocr@$(manifest_digest app1 v1) --facts oci:app1:v1 \
     --gpus 1 -o job1.yaml 2>job1.err && grep -q 'sm_90' job1.yaml && grep -q '525' job1.yaml || { cat job1.err; exit 1; }"
gcc -shared -fPIC -O1 -Wall -Werror -Wl,-soname,libnvidia-ml.so.1 -o fake-nvml.so "$SUPPORT/fakegpu/fake_nvml.c"
gcc -shared -fPIC -O1 -Wall -Werror -Wl,-soname,libcuda.so.1 -o fake-cuda.so "$SUPPORT/fakegpu/fake_cuda.c"
bash "$SUPPORT/prepare-host.sh" "$ROOT/tests/fixtures/hosts/healthy-8xh100" "$WORK/h100" "$WORK/fake-nvml.so" "$WORK/fake-cuda.so" >/dev/null
PI_FAKE_GPU_SCENARIO="$WORK/h100/scenario.conf" "$PI" doctor --root "$WORK/h100/root" --timeout 5 --image oci:app1:v1 \
  --json >doctor-app1.json 2>doctor-app1.err || true
check "doctor --image on an H100 host: the driver, CUDA and architecture checks pass (none skips)" js doctor-app1.json '
s = {c["id"]: c["status"] for c in j["checks"]}
assert s.get("image.cuda-driver") == "PASS" and s.get("image.gpu-arch") == "PASS", s'
/usr/bin/python3 "$SUPPORT/make-paddle-base.py" pc121 "$BASE_ROOTFS" "$TAG" --variant cuda121 \
  --push "$REG_HOST/mirror/paddlepaddle/paddle" >/dev/null
sed "s|^base: .*|base: $REG_HOST/mirror/paddlepaddle/paddle:$TAG|" app/spec.yaml >app/spec-c121.yaml
check "where the base and the matrix disagree (CUDA 12.1 under a cuda12.0 tag) the base wins, and the build says so" bash -c \
  "'$PI' build app/spec-c121.yaml -o oci:c121:v1 --insecure-registry '$REG_HOST' --cache-dir '$WORK/cache' 2>c121.err >/dev/null &&
   grep -q 'warning: the base states cuda.version 12.1 (ENV CUDA_VERSION); the compatibility matrix says 12.0' c121.err &&
   grep -q 'io.paddle-image.driver.min = 530.30.02 (the compatibility matrix.s driver for CUDA 12.1' c121.err &&
   '$PI' inspect oci:c121:v1 --json | /usr/bin/python3 -c 'import json,sys; l=json.load(sys.stdin)[\"config\"][\"config\"][\"Labels\"]
assert l[\"io.paddle-image.cuda.version\"] == \"12.1\" and l[\"io.paddle-image.driver.min\"] == \"530.30.02\", l' || { cat c121.err; exit 1; }"
# A docker-archive base: the same base saved as `docker save` would, the same app layer on it.
"$PI" copy "oci:pbase:$TAG" docker-archive:pbase.tar --name paddlepaddle/paddle -q >/dev/null
sed "s|^base: .*|base: docker-archive:../pbase.tar|" app/spec.yaml >app/spec-archive.yaml
check "a docker-archive: base builds the same app layer as the registry base" bash -c \
  "'$PI' build app/spec-archive.yaml -o oci:arch1:v1 --cache-dir '$WORK/cache-arch' 2>arch1.err >/dev/null &&
   cmp \"\$(/usr/bin/python3 -c 'import json,sys; d=sys.argv[1]; i=json.load(open(d+\"/index.json\")); m=json.load(open(d+\"/blobs/sha256/\"+i[\"manifests\"][0][\"digest\"][7:])); print(d+\"/blobs/sha256/\"+m[\"layers\"][-1][\"digest\"][7:])' arch1)\" \
       \"\$(/usr/bin/python3 -c 'import json,sys; d=sys.argv[1]; i=json.load(open(d+\"/index.json\")); m=json.load(open(d+\"/blobs/sha256/\"+i[\"manifests\"][0][\"digest\"][7:])); print(d+\"/blobs/sha256/\"+m[\"layers\"][-1][\"digest\"][7:])' app1)\" &&
   '$PI' inspect oci:arch1:v1 --json | grep -q '\"io.paddle-image.cuda.version\": \"12.0\"' || { cat arch1.err; exit 1; }"
check "a push to the base's registry mounts the base layers, and progress and --metadata-file say so" bash -c \
  "env -u CI '$PI' build 'app/spec-$TAG.yaml' -o '$REG_HOST/team/app:v1' --insecure-registry '$REG_HOST' \
     --cache-dir '$WORK/cache' --metadata-file push1.json >push1.out 2>push1.err &&
   test \$(grep -c ' mounted from paddlepaddle/paddle (' push1.err) -eq 16 &&
   /usr/bin/python3 -c 'import json,sys; b=json.load(open(\"push1.json\"))[\"registry\"][\"blobs\"]
hows=[x[\"how\"] for x in b]
assert hows.count(\"mounted from paddlepaddle/paddle\") == 16 and hows.count(\"uploaded\") == 2, hows
assert all(x[\"repository\"] == \"team/app\" for x in b), b' || { cat push1.err; exit 1; }"
check "the build says which links it wrote through" grep -q "through the symlink /usr/local/cuda -> /etc/alternatives/cuda" b1.err
check "sbom of the app reads only the app's layer (the base's tree is the build's cached view) and lists the base's packages" \
  bash -c "'$PI' sbom oci:app1:v1 --cache-dir '$WORK/cache' --format cyclonedx -o app1-bom.json 2>app1-bom.err &&
    grep -q 'reading the file tree of .*(the top 1 of [0-9]* layers; the [0-9]* below them from the cache)' app1-bom.err &&
    /usr/bin/python3 -c 'import json,sys; c={x[\"purl\"] for x in json.load(open(\"app1-bom.json\"))[\"components\"] if \"purl\" in x}
assert \"pkg:pypi/paddlepaddle-gpu@2.6.1\" in c and \"pkg:pypi/opt-einsum@3.3.0\" in c, sorted(c)[:20]
assert any(p.startswith(\"pkg:deb/debian/libc6@\") for p in c), sorted(c)[:20]' || { cat app1-bom.err; exit 1; }"
app_layer() { # LAYOUT: the path of the last layer's blob
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
d = sys.argv[1]
idx = json.load(open(d + "/index.json"))
m = json.load(open(d + "/blobs/sha256/" + idx["manifests"][0]["digest"][7:]))
print(d + "/blobs/sha256/" + m["layers"][-1]["digest"][7:])
PY
}
check "the layer keeps /tmp 1777 and the home 0750 paddle, writes through the links, makes none a directory" \
  /usr/bin/python3 - "$(app_layer app1)" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    e = {m.name.rstrip("/").lstrip("./"): m for m in t.getmembers()}
assert e["tmp"].isdir() and e["tmp"].mode == 0o1777, oct(e["tmp"].mode)
assert e["tmp/warmup"].mode == 0o755
assert e["home/paddle"].mode == 0o750 and e["home/paddle"].uid == 1000 and e["home/paddle"].uname == "paddle"
assert e["home/paddle/work/notes.txt"].uid == 1000
assert "usr/local/cuda" not in e and "usr/local/cuda/lib64/warm.yml" not in e, sorted(e)
assert e["usr/local/cuda-12.0/lib64/warm.yml"].isfile()
assert "lib" not in e and e["usr/lib/x86_64-linux-gnu/y"].isfile(), sorted(e)
PY

# ---- earlier layers of the same build count too ---------------------------------------
mkdir -p app/code app/conf
echo 'print(1)' >app/code/main.py
echo 'k: v' >app/conf/x.yml
cat >app/two.yaml <<YAML
image: {name: example.com/team/two, tags: [v1]}
base: $R:$TAG
layers:
  - name: code
    files: [{from: code/, to: /srv/app/, owner: "1000:1000", dir_mode: "0750"}]
  - name: conf
    files: [{from: conf/, to: /srv/app/conf/}]
YAML
check "two layers build" "$PI" build app/two.yaml -q -o oci:two:v1 --insecure-registry "$REG_HOST" --cache-dir "$WORK/cache"
check "the second layer keeps the first layer's /srv/app (0750 1000), not 0755 root" \
  /usr/bin/python3 - "$(app_layer two)" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    e = {m.name.rstrip("/").lstrip("./"): m for m in t.getmembers()}
assert e["srv/app"].mode == 0o750 and e["srv/app"].uid == 1000, (oct(e["srv/app"].mode), e["srv/app"].uid)
assert e["srv/app/conf"].mode == 0o755 and e["srv/app/conf"].uid == 0
assert e["srv"].mode == 0o755
PY

# ---- run it: podman, overlay storage driver, root and uid 1000 ----------------------------
export PODMAN_TMP=$WORK/podman
# The helpers' runroot: under /tmp when CI's deep work directory would make it longer
# than podman accepts; podman_cleanup removes it.
PODMAN_RUN=$(_podman_runroot)
mkdir -p "$PODMAN_TMP"/{root,tmp} "$PODMAN_RUN"
PODMAN_OVERLAY=(--root "$PODMAN_TMP/root" --runroot "$PODMAN_RUN" --tmpdir "$PODMAN_TMP/tmp"
  --storage-driver overlay --cgroup-manager cgroupfs --events-backend file)
probe='touch /tmp/x && stat -c "%a %u:%g" /tmp /home/paddle && readlink /usr/local/cuda && test -L /lib &&
  ls /usr/local/cuda/lib64 && cat /usr/local/cuda/lib64/warm.yml /lib/x86_64-linux-gnu/y /tmp/warmup/det.yml &&
  python3 -c "import sys; sys.path.insert(0, \"/usr/local/lib/python3.11/dist-packages\"); import paddle; print(paddle.__version__)"'
run_podman() { # USER
  unshare --mount --propagation private podman "${PODMAN_OVERLAY[@]}" run --rm --network none --user "$1" \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "oci:$WORK/app1:v1" sh -c "$probe" </dev/null
}
if run_podman 0 >podman-root.txt 2>podman-root.err; then
  check "podman (overlay driver) as root: the base's tree and the new files" bash -c \
    "grep -qx '1777 0:0' podman-root.txt && grep -qx '750 1000:1000' podman-root.txt && grep -qx /etc/alternatives/cuda podman-root.txt &&
     grep -qx libcudart.so.12 podman-root.txt && grep -qx warm podman-root.txt && grep -qx y podman-root.txt && grep -qx 2.6.1 podman-root.txt"
  run_podman 1000 >podman-1000.txt 2>podman-1000.err || true
  check "podman (overlay driver) as uid 1000: /tmp is writable, the home is still its 0750" bash -c \
    "grep -qx '750 1000:1000' podman-1000.txt && grep -qx 2.6.1 podman-1000.txt || { cat podman-1000.err; exit 1; }"
  check "podman's storage driver was overlay" bash -c "unshare --mount --propagation private podman ${PODMAN_OVERLAY[*]} info --format '{{.Store.GraphDriverName}}' | grep -qx overlay"
else
  fail "podman with the overlay driver could not run the image: $(tail -3 podman-root.err)"
fi

# ---- run it: containerd with the overlayfs snapshotter (private socket, root and mounts) -----
CTD=$WORK/ctd
unset CONTAINERD_NAMESPACE CONTAINERD_SNAPSHOTTER
containerd_start "$CTD" overlayfs || true
"$PI" copy oci:app1:v1 docker-archive:app1.tar -q >/dev/null || true
ctd_run() { # UID (this ctr has no --user: the probe drops to UID with util-linux's setpriv)
  ctr -n pitest run --rm --snapshotter overlayfs "$CTD_IMAGE" "probe-$1" \
    setpriv --reuid "$1" --regid "$1" --clear-groups sh -c "$probe"
}
CTD_IMAGE=
if ctr -n pitest images import --snapshotter overlayfs app1.tar >ctd-import.log 2>&1; then
  CTD_IMAGE=$(ctr -n pitest images ls -q | head -1)
fi
if [[ -n $CTD_IMAGE ]] && ctd_run 0 >ctd-root.txt 2>ctd-root.err; then
  ctd_run 1000 >ctd-1000.txt 2>ctd-1000.err || true
  check "containerd (overlayfs snapshotter) as root: the base's tree and the new files" bash -c \
    "grep -qx '1777 0:0' ctd-root.txt && grep -qx '750 1000:1000' ctd-root.txt && grep -qx warm ctd-root.txt && grep -qx 2.6.1 ctd-root.txt"
  check "containerd (overlayfs snapshotter) as uid 1000: /tmp writable, the home 0750" bash -c \
    "grep -qx '750 1000:1000' ctd-1000.txt && grep -qx 2.6.1 ctd-1000.txt || { cat ctd-1000.err; exit 1; }"
  check "the image was unpacked into overlayfs snapshots" bash -c "ctr -n pitest snapshots --snapshotter overlayfs ls | grep -q ."
else
  fail "containerd with the overlayfs snapshotter could not run the image: $(tail -3 ctd-import.log ctd-root.err 2>/dev/null)"
fi

# ---- a wheels layer replaces the base's Python packages as pip does --------------------------
mkdir -p repl/new repl/same
/usr/bin/python3 - "$SUPPORT/make-index-wheels.py" repl <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("miw", sys.argv[1])
miw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(miw)
out = sys.argv[2]
miw.write_wheel(out + "/new", "opt_einsum", "3.4.0", "py3-none-any",
                [("opt_einsum/__init__.py", "__version__ = '3.4.0'\n"), ("opt_einsum/contract.py", "X = 1\n")])
miw.write_wheel(out + "/new", "six", "1.17.0", "py3-none-any", [("six.py", "__version__ = '1.17.0'\n")])
miw.write_wheel(out + "/same", "opt_einsum", "3.3.0", "py3-none-any", [("opt_einsum/__init__.py", "x = 1\n")])
PY
repl_spec() { # NAME DIR EXTRA
  printf 'image: {name: example.com/team/repl, tags: [v1]}\nbase: %s\nlayers:\n  - name: deps\n    wheels: {dir: %s%s}\n' \
    "$R:$TAG" "$2" "$3" >"repl/$1.yaml"
}
repl_spec conflict new ""
repl_spec allowed new ", allow_conflicts: true"
repl_spec same same ""
expect_fail "a replacement that breaks a requirement of what stays names both (exit 9)" 9 \
  "paddlepaddle-gpu 2.6.1 \(/usr/local/lib/python3.11/dist-packages/paddlepaddle_gpu-2.6.1.dist-info\) requires 'opt-einsum ==3.3.0', but .*opt_einsum-3.4.0-py3-none-any.whl installs opt_einsum 3.4.0" \
  "$PI" build repl/conflict.yaml -o oci:rx:v1 --insecure-registry "$REG_HOST" --cache-dir "$WORK/cache"
check "... and the hint names wheels.allow_conflicts" grep -q "wheels.allow_conflicts: true" "$WORK/err.txt"
check "with wheels.allow_conflicts it builds, and says what it replaced and what it left" bash -c \
  "'$PI' build repl/allowed.yaml -o oci:rimg:v1 --insecure-registry '$REG_HOST' --cache-dir '$WORK/cache' \
     --metadata-file repl.json >repl.out 2>repl.err &&
   grep -q 'warning: allowed by wheels.allow_conflicts' repl.err &&
   grep -q 'replaces opt-einsum 3.3.0 -> 3.4.0 (removes /usr/local/lib/python3.11/dist-packages/opt_einsum-3.3.0.dist-info' repl.err &&
   grep -q 'installs six 1.17.0 beside 1.16.0 at /usr/lib/python3/dist-packages/six-1.16.0.egg-info, which stays: installed by Debian' repl.err ||
   { cat repl.err; exit 1; }"
check "--metadata-file names each replacement (old -> new)" js repl.json '
r = {x["name"]: x for x in j["layers"][-1]["replacements"]}
assert r["opt-einsum"]["action"] == "replace" and r["opt-einsum"]["from"] == "3.3.0" and r["opt-einsum"]["to"] == "3.4.0", r
assert r["six"]["action"] == "shadow" and r["six"]["from"] == "1.16.0", r'
check "the layer whites out the old files, its bytecode, its script and .dist-info; never Debian's" /usr/bin/python3 -c '
import sys, tarfile
names = set(tarfile.open(sys.argv[1]).getnames())
site = "usr/local/lib/python3.11/dist-packages/"
want = {site + ".wh.opt_einsum-3.3.0.dist-info", site + "opt_einsum/.wh.paths.py",
        site + "opt_einsum/.wh.__pycache__", "usr/local/bin/.wh.opt-einsum-info"}
assert want <= names, sorted(n for n in names if ".wh." in n)
assert not any(".wh." in n and "usr/lib/python3" in n for n in names), names
assert site + "opt_einsum/__init__.py" in names and site + "opt_einsum/.wh.__init__.py" not in names' "$(app_layer rimg)"
check "sbom lists one opt-einsum, the new one" bash -c \
  "'$PI' sbom oci:rimg:v1 --cache-dir '$WORK/cache' --format cyclonedx -o repl-bom.json 2>/dev/null &&
   /usr/bin/python3 -c 'import json; c=[x[\"purl\"] for x in json.load(open(\"repl-bom.json\"))[\"components\"] if x.get(\"purl\",\"\").startswith(\"pkg:pypi/opt-einsum@\")]
assert c == [\"pkg:pypi/opt-einsum@3.4.0\"], c'"
repl_probe='import importlib.metadata as m, glob, os, opt_einsum, six
print(m.version("opt-einsum"), opt_einsum.__version__, six.__version__, m.version("six"))
print(len(glob.glob("/usr/local/lib/python3.11/dist-packages/opt_einsum-*.dist-info")),
      os.path.exists("/usr/local/bin/opt-einsum-info"), os.path.exists("/usr/local/lib/python3.11/dist-packages/opt_einsum/paths.py"),
      os.path.exists("/usr/lib/python3/dist-packages/six.py"))'
if unshare --mount --propagation private podman "${PODMAN_OVERLAY[@]}" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
     "oci:$WORK/rimg:v1" python3 -c "$repl_probe" >repl-run.txt 2>repl-run.err </dev/null; then
  check "in the image (podman): one opt-einsum, 3.4.0; the old script and module gone; six 1.17.0 shadows Debian's" bash -c \
    "grep -qx '3.4.0 3.4.0 1.17.0 1.17.0' repl-run.txt && grep -qx '1 False False True' repl-run.txt || { cat repl-run.txt; exit 1; }"
else
  fail "podman could not run the replacing image: $(tail -3 repl-run.err)"
fi
check "the same version is already satisfied: not installed again, and reported" bash -c \
  "'$PI' build repl/same.yaml -o oci:rsame:v1 --insecure-registry '$REG_HOST' --cache-dir '$WORK/cache' \
     --metadata-file rsame.json >rsame.out 2>rsame.err &&
   grep -q 'opt-einsum 3.3.0 is already satisfied by /usr/local/lib/python3.11/dist-packages/opt_einsum-3.3.0.dist-info' rsame.err &&
   /usr/bin/python3 -c 'import json; j=json.load(open(\"rsame.json\")); assert j[\"wheels\"] == [], j[\"wheels\"]; assert j[\"layers\"][-1][\"replacements\"][0][\"action\"] == \"satisfied\"' ||
   { cat rsame.err; exit 1; }"

# ---- wheels.uninstall: pip uninstall of the base's distributions --------------------------
uninstall_spec() { # NAME NAMES
  printf 'image: {name: example.com/team/slim, tags: [v1]}\nbase: %s\nlayers:\n  - name: slim\n    wheels: {uninstall: [%s]}\n' \
    "$R:$TAG" "$2" >"repl/$1.yaml"
}
uninstall_spec un-opt "opt-einsum"
uninstall_spec un-six "six"
uninstall_spec un-none "opencv-python"
check "an uninstall layer builds, saying what it removes" bash -c \
  "'$PI' build repl/un-opt.yaml -o oci:runi:v1 --insecure-registry '$REG_HOST' --cache-dir '$WORK/cache' \
     --metadata-file runi.json >runi.out 2>runi.err &&
   grep -qE 'uninstalls opt[-_]einsum 3.3.0 \(removes /usr/local/lib/python3.11/dist-packages/opt_einsum-3.3.0.dist-info' runi.err &&
   /usr/bin/python3 -c 'import json; j=json.load(open(\"runi.json\")); r=j[\"layers\"][-1][\"replacements\"]; assert [x[\"action\"] for x in r] == [\"uninstall\"], r' ||
   { cat runi.err; exit 1; }"
check "the layer is whiteouts only: the module, its bytecode, its script, its .dist-info" /usr/bin/python3 -c '
import sys, tarfile
names = set(n.rstrip("/") for n in tarfile.open(sys.argv[1]).getnames())
site = "usr/local/lib/python3.11/dist-packages/"
assert {site + ".wh.opt_einsum-3.3.0.dist-info", site + ".wh.opt_einsum", "usr/local/bin/.wh.opt-einsum-info"} <= names, sorted(names)
files = [n for n in tarfile.open(sys.argv[1]).getmembers() if n.isfile() and ".wh." not in n.name]
assert not files, files
assert not any("paddle" in n for n in names), sorted(names)' "$(app_layer runi)"
check "sbom of the image lists no opt-einsum, paddlepaddle-gpu still" bash -c \
  "'$PI' sbom oci:runi:v1 --cache-dir '$WORK/cache' --format cyclonedx -o runi-bom.json 2>/dev/null &&
   /usr/bin/python3 -c 'import json; p=[x.get(\"purl\",\"\") for x in json.load(open(\"runi-bom.json\"))[\"components\"]]
assert not [x for x in p if x.startswith(\"pkg:pypi/opt-einsum@\")], p
assert [x for x in p if x.startswith(\"pkg:pypi/paddlepaddle-gpu@\")], p'"
expect_fail "uninstalling Debian's six is refused, naming why (exit 3)" 3 \
  "un-six.yaml:5:[0-9]+: layer 'slim' uninstalls six 1.16.0 at /usr/lib/python3/dist-packages/six-1.16.0.egg-info, which pip cannot uninstall: installed by Debian" \
  "$PI" build repl/un-six.yaml -o oci:rsix:v1 --insecure-registry "$REG_HOST" --cache-dir "$WORK/cache"
expect_fail "uninstalling what the base does not have is an error (exit 3)" 3 \
  "layer 'slim' uninstalls opencv-python, which is not installed where the layer lands" \
  "$PI" build repl/un-none.yaml -o oci:rnone:v1 --insecure-registry "$REG_HOST" --cache-dir "$WORK/cache"

# ---- deterministic, and cached by what it touched ------------------------------------------
build app2 "$TAG" b2 || true
check "the same build again reuses the layer" grep -q '(0 layer(s) rebuilt, 1 reused)' b2.err
check "... and gives the same bytes" cmp "$(app_layer app1)" "$(app_layer app2)"
build app3 "$TAG-extra" b3 || true
check "a base patched elsewhere (/opt/extra) reuses the layer" grep -q '(0 layer(s) rebuilt, 1 reused)' b3.err
check "... the same bytes" cmp "$(app_layer app1)" "$(app_layer app3)"
build app4 "$TAG-home0700" b4 || true
check "a base whose /home/paddle changed rebuilds the layer" grep -q '(1 layer(s) rebuilt, 0 reused)' b4.err
check "... 0700 now" /usr/bin/python3 -c '
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    assert t.getmember("home/paddle/").mode == 0o700' "$(app_layer app4)"
finish
