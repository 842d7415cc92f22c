#!/usr/bin/env bash
# Shared setup for the integration tests (sourced). Each test gets its own work dir
# under the build tree; fixtures come from $PADDLE_IMAGE_TEST_CACHE (made by
# scripts/test.sh before any test runs).
set -euo pipefail
SUPPORT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SUPPORT/../.." && pwd)
PI=${PI:-$ROOT/build/cli/paddle-image}
FIXTURES=${PADDLE_IMAGE_TEST_CACHE:-$HOME/.cache/paddle-image-test}
WHEELS=$FIXTURES/wheels
BASE_ROOTFS=$FIXTURES/base/rootfs
TEST_NAME=$(basename "$0" .sh)
WORK=${TEST_WORK:-$ROOT/build/test-work/$TEST_NAME}
rm -rf "$WORK"
mkdir -p "$WORK"
export PADDLE_IMAGE_CACHE=$WORK/cache
unset SOURCE_DATE_EPOCH
PASSED=0
FAILED=0

pass() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }
check() { # check DESCRIPTION CMD... (CMD's output goes to $WORK/check.log)
  local d=$1; shift
  if "$@" >"$WORK/check.log" 2>&1; then pass "$d"; else fail "$d: $(tail -5 "$WORK/check.log")"; fi
}
finish() {
  echo "$TEST_NAME: $PASSED passed, $FAILED failed"
  [[ $FAILED -eq 0 && $PASSED -gt 0 ]]
}
# expect_fail DESCRIPTION EXIT_CODE PATTERN CMD...: CMD must exit EXIT_CODE and
# print PATTERN (grep -E) on stderr (an empty PATTERN checks the exit code only;
# stdout is kept in $WORK/out.txt for further checks).
expect_fail() {
  local d=$1 want=$2 pat=$3; shift 3
  local rc=0
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$d (exit $rc, wanted $want): $(head -3 "$WORK/err.txt")"
  elif [[ -n "$pat" ]] && ! grep -qE -- "$pat" "$WORK/err.txt"; then
    fail "$d (stderr lacks /$pat/): $(head -3 "$WORK/err.txt")"
  else
    pass "$d"
  fi
}
manifest_digest() { # LAYOUT TAG
  python3 - "$1" "$2" <<'PY'
import json, sys
idx = json.load(open(sys.argv[1] + "/index.json"))
for m in idx["manifests"]:
    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == sys.argv[2]:
        print(m["digest"]); break
PY
}
# attestation_statements LAYOUT TAG: the in-toto statements attached to LAYOUT:TAG (the
# DSSE payloads of its .att manifest), one JSON document per line.
attestation_statements() {
  python3 - "$1" "$2" <<'PY'
import base64, json, sys
lay, tag = sys.argv[1:3]
name = lambda m: m.get("annotations", {}).get("org.opencontainers.image.ref.name")
idx = json.load(open(lay + "/index.json"))
img = [m for m in idx["manifests"] if name(m) == tag][0]
att = [m for m in idx["manifests"] if name(m) == img["digest"].replace(":", "-") + ".att"][0]
man = json.load(open(lay + "/blobs/sha256/" + att["digest"][7:]))
for l in man["layers"]:
    env = json.load(open(lay + "/blobs/sha256/" + l["digest"][7:]))
    print(json.dumps(json.loads(base64.b64decode(env["payload"]))))
PY
}
# patch_config LAYOUT PYTHON: rewrites the config of the layout's first image as another
# tool might have written it (PYTHON edits the config dict `c`), its manifest and index
# entry following (new digests).
patch_config() {
  python3 - "$1" "$2" <<'PY'
import hashlib, json, os, sys
lay, code = sys.argv[1:3]
def blob(d):
    return os.path.join(lay, "blobs", "sha256", d.split(":")[1])
def put(data):
    d = "sha256:" + hashlib.sha256(data).hexdigest()
    open(blob(d), "wb").write(data)
    return d, len(data)
idx = json.load(open(os.path.join(lay, "index.json")))
m = json.load(open(blob(idx["manifests"][0]["digest"])))
c = json.load(open(blob(m["config"]["digest"])))
exec(code)
m["config"]["digest"], m["config"]["size"] = put(json.dumps(c).encode())
idx["manifests"][0]["digest"], idx["manifests"][0]["size"] = put(json.dumps(m).encode())
json.dump(idx, open(os.path.join(lay, "index.json"), "w"))
PY
}
layer_digests() { # LAYOUT TAG -> one layer digest per line
  local d; d=$(manifest_digest "$1" "$2")
  python3 -c 'import json,sys; [print(l["digest"]) for l in json.load(open(sys.argv[1]))["layers"]]' \
    "$1/blobs/sha256/${d#sha256:}"
}
# Every blob's file name is its sha256 (no half-written blob looks complete).
blobs_intact() {
  local f ok=0
  for f in "$1"/blobs/sha256/*; do
    [[ -e "$f" ]] || continue
    if [[ "$(sha256sum "$f" | cut -d' ' -f1)" != "$(basename "$f")" ]]; then
      echo "corrupt blob $f"; ok=1
    fi
  done
  return $ok
}
# A spec that turns the cached Debian rootfs fixture into a base image.
# two_layer_image REPO MIB: builds oci:img:v1 in the current directory, a scratch image
# named REPO with two uncompressed data layers of MIB MiB of random bytes each (a/, b/).
two_layer_image() {
  mkdir -p a b
  head -c "${2}M" /dev/urandom >a/a.bin
  head -c "${2}M" /dev/urandom >b/b.bin
  cat >img.yaml <<YAML
image: {name: $1, tags: [v1]}
base: scratch
compression: none
layers:
  - name: a
    data: [{from: a/, to: /opt/a/}]
  - name: b
    data: [{from: b/, to: /opt/b/}]
YAML
  "$PI" build img.yaml -q -o oci:img:v1 >/dev/null
}
debian_base_spec() { # FILE
  cat >"$1" <<YAML
base: scratch
layers:
  - name: rootfs
    files:
      - from: $BASE_ROOTFS
        to: /
        allow_absolute_symlinks: true
        allow_outside: true   # the cached Debian rootfs lives outside the test dir
config:
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
  cmd: [/bin/sh]
YAML
}
# A small project: wheels (from the fixtures), a model file and business code.
make_project() { # DIR
  local d=$1
  mkdir -p "$d/src/pkg" "$d/models" "$d/wheels"
  cp "$WHEELS"/purepkg-*.whl "$WHEELS"/nspkg_*.whl "$WHEELS"/cext-*.whl "$d/wheels/"
  printf 'import purepkg\nprint(purepkg.hello())\n' >"$d/src/train.py"
  printf 'X = 1\n' >"$d/src/pkg/__init__.py"
  head -c 2000000 /dev/zero | tr '\0' 'w' >"$d/models/weights.bin"
  cat >"$d/spec.yaml" <<YAML
image:
  name: example.com/team/app
  tags: [v1]
base: scratch
python:
  version: "3.11"
  glibc: "2.36"
layers:
  - name: deps
    wheels:
      dir: wheels/
  - name: models
    data:
      - from: models/
        to: /opt/models/
  - name: app
    files:
      - from: src/
        to: /app/
        exclude: ["__pycache__"]
config:
  entrypoint: [python3, /app/train.py]
  workdir: /app
YAML
}

# in_netns_with_server ADDR PORT LOG CMD...: runs CMD in a new network namespace (nothing
# outside it is reachable) whose lo also holds ADDR, a non-loopback address, with a
# plain-HTTP server (python3 -m http.server, requests logged to LOG) on ADDR:PORT.
# CMD's exit code is returned. For "plain HTTP only with the flag" checks: paddle-image
# judges loopback by the literal host, so ADDR is not loopback to it.
in_netns_with_server() {
  local addr=$1 port=$2 log=$3
  shift 3
  unshare --net bash -c '
    addr=$1 port=$2 log=$3; shift 3
    ip link set lo up && ip addr add "$addr/32" dev lo || exit 97
    python3 -m http.server --bind "$addr" "$port" 2>>"$log" &
    srv=$!
    for _ in $(seq 50); do
      python3 -c "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 0.2)" "$addr" "$port" 2>/dev/null && break
      sleep 0.1
    done
    : >"$log"
    rc=0; "$@" || rc=$?
    kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
    exit $rc' _ "$addr" "$port" "$log" "$@"
}
export -f in_netns_with_server
