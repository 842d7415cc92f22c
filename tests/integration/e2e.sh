#!/usr/bin/env bash
# End to end, with no PYTHONPATH or other help: a Debian base (debootstrap rootfs,
# turned into an OCI image by paddle-image itself) builds; the app builds on the
# Paddle-shaped base (tests/support/make-paddle-base.py: Docker media types behind a
# manifest list, paddlepaddle-gpu, CUDA behind links, merged /usr), wheels installed by
# us, unpacked with umoci and run with runc.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
cd "$WORK"
[[ -d "$BASE_ROOTFS" ]] || { echo "missing fixture $BASE_ROOTFS (run scripts/test.sh)"; exit 1; }
pyver=$(cat "$FIXTURES/base/python-version")

debian_base_spec base.yaml
check "base image builds from the rootfs" "$PI" build base.yaml -q -o oci:base:bookworm
TAG=2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6
check "the Paddle-shaped base is generated" /usr/bin/python3 "$SUPPORT/make-paddle-base.py" pbase "$BASE_ROOTFS" "$TAG"

mkdir -p app/src app/wheels
cp "$WHEELS"/*.whl app/wheels/
cp "$WHEELS"/wheels.lock app/wheels.lock
cat >app/src/train.py <<'PY'
import sys
import purepkg, nsroot.alpha, nsroot.beta
import cext._fast as fast
print("import", purepkg.hello(), nsroot.alpha.VALUE, fast.add(2, 3), "sys.path-ok" if not any("app" in p for p in sys.path[1:]) else "")
PY
cat >app/spec.yaml <<YAML
image: {name: example.com/e2e/app, tags: [v1]}
base: oci:../pbase:$TAG
layers:
  - name: deps
    wheels: {dir: wheels/, lock: wheels.lock}
  - name: app
    files:
      - {from: src/, to: /app/}
config:
  entrypoint: [python3, /app/train.py]
YAML
check "app builds on the base (python derived from it)" "$PI" build app/spec.yaml -q -o oci:img:v1 --metadata-file meta.json
sed 's|^base: |platform: linux/arm64\nbase: |' app/spec.yaml >app/spec-arm.yaml
expect_fail "a base without the spec's platform: exit 9, the hint names the spec's platform:, not copy's flags" 9 \
  "set platform: in spec-arm.yaml to one the base has" "$PI" build app/spec-arm.yaml -q -o oci:arm:v1
check "python target derived from the base" grep -q "\"io.paddle-image.python.version\": \"$pyver\"" <("$PI" inspect oci:img:v1 --json)
check "base.name label is the reference as written (no host path)" grep -q "\"org.opencontainers.image.base.name\": \"oci:../pbase:$TAG\"" <("$PI" inspect oci:img:v1 --json)
pbase_manifest=$(/usr/bin/python3 -c 'import json,sys; d=sys.argv[1]; i=json.load(open(d+"/index.json"))["manifests"][0]["digest"]
print(json.load(open(d+"/blobs/sha256/"+i[7:]))["manifests"][0]["digest"])' pbase)
check "base.digest label names the base's linux/amd64 manifest" grep -q "\"org.opencontainers.image.base.digest\": \"$pbase_manifest\"" <("$PI" inspect oci:img:v1 --json)
check "umoci unpack" umoci unpack --image img:v1 bundle
site=bundle/rootfs/usr/local/lib/python$pyver/dist-packages
check "wheels land in Debian's dist-packages" test -d "$site/purepkg"
# (the base's opt_einsum carries bytecode Python wrote for it; the build writes none)
check "no .pyc written" bash -c "! find bundle/rootfs/usr/local -name '*.pyc' -not -path '*/opt_einsum/*' | grep -q ."
check "INSTALLER says paddle-image" grep -qx paddle-image "$site"/purepkg-1.0.dist-info/INSTALLER

out=$(run_in_bundle bundle python3 /app/train.py 2>&1) || true
check "business code imports pure, namespace and platlib wheels" grep -q "import pure-ok ns-ok 5" <<<"$out"
out=$(run_in_bundle bundle pure-hello 2>&1) || true
check "console script from entry point runs" grep -qx "console-ok" <<<"$out"
out=$(run_in_bundle bundle pure-data-script 2>&1) || true
check ".data/scripts script runs with rewritten shebang" grep -qx "data-script-ok" <<<"$out"
check "shebang points at the base's interpreter" grep -qx "#!/usr/bin/python$pyver" <(head -1 bundle/rootfs/usr/local/bin/pure-data-script)
out=$(run_in_bundle bundle python3 -m pip check 2>&1) || true
check "pip check passes inside the container" grep -q "No broken requirements found" <<<"$out"
out=$(run_in_bundle bundle python3 -m pip show -f pip 2>&1) || true
check "pip show -f lists our RECORD" grep -q "pip/__init__.py" <<<"$out"
check "pip show reports our location" grep -q "Location: /usr/local/lib/python$pyver/dist-packages" <<<"$out"
out=$(run_in_bundle bundle python3 -m pip --version 2>&1) || true
check "pip installed by us runs" grep -q "^pip 2" <<<"$out"
check "metadata lists installed wheels with sha256" python3 -c '
import json,sys; m=json.load(open("meta.json")); w={x["name"]:x for x in m["wheels"]}
sys.exit(0 if {"purepkg","cext","pip"} <= set(w) and all(len(x["sha256"])==64 for x in w.values()) else 1)'
finish
