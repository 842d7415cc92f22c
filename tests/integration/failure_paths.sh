#!/usr/bin/env bash
# Failure paths of issue 34, seen from the command line: no network read hangs for
# ever (an endless or dripping manifest, token answer, blob, index page and credential
# helper), a credential helper cannot kill paddle-image with SIGPIPE, SIGINT stops a
# zstd level-19 layer within a second (and the layer bytes are what they were), server
# text and error lines carry no secret and no raw control character, a base's facts
# and labels that no reader accepts are not copied into the image, registry failures
# on an attestation keep their exit codes, verify-blob refuses a huge signature file by
# its size, and each push target's SBOM names its own repository.
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
cd "$WORK"
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
export PIP_CONFIG_FILE=/dev/null
export DOCKER_CONFIG=$WORK/docker-config
mkdir -p "$DOCKER_CONFIG"
trap registry_stop_all EXIT

# within SECONDS CMD...: CMD ran in under SECONDS (wall clock).
within() {
  local limit=$1 start end
  shift
  start=$(date +%s.%N)
  "$@" || true
  end=$(date +%s.%N)
  python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) < float(sys.argv[3]) else 1)" \
    "$start" "$end" "$limit"
}

two_layer_image example.com/fp/app 1
registry_start reg open "$WORK/srv"
proxy_start fp "$REG_HOST" "$WORK/srv"
"$PI" push oci:img:v1 "$REG_HOST/fp/img:v1" --insecure -q >/dev/null
FAST=(--insecure --retries 0 --timeout 2)

# --- 4: documents have a deadline and a cap; streams a minimum rate ---------------
proxy_rules fp '{"method": "GET", "path": "/manifests/", "action": "endless", "times": -1, "headers": {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}}'
expect_fail "a manifest without end fails at the 4 MiB cap (exit 7), never cut and parsed" 7 \
  "larger than 4194304 bytes, the most this request accepts" "$PI" inspect "$FP_HOST/fp/img:v1" "${FAST[@]}"
check "... and says nothing of JSON columns" bash -c "! grep -q 'column' '$WORK/err.txt'"
proxy_rules fp '{"method": "GET", "path": "/manifests/", "action": "drip", "interval": 0.3, "times": -1}'
check "a dripping manifest fails at the deadline (2 x --timeout) with exit 6, within 8 s" \
  within 8 bash -c "'$PI' inspect '$FP_HOST/fp/img:v1' --insecure --retries 0 --timeout 2 2>'$WORK/drip.err'; test \$? -eq 6"
check "... naming the deadline" grep -q "no complete answer within 4 s" drip.err
proxy_rules fp '{"method": "GET", "path": "/tags/list", "action": "drip", "interval": 0.3, "times": -1}'
check "a dripping tag list fails at the same deadline, said as a tag list's (not a manifest's), within 8 s" \
  within 8 bash -c "'$PI' cache ls '$FP_HOST/fp/cache' --insecure --retries 0 --timeout 2 2>'$WORK/drip-tags.err'; test \$? -eq 6 &&
    grep -q 'listing tags of fp/cache: .*no complete answer within 4 s (the deadline for a whole answer' '$WORK/drip-tags.err' &&
    ! grep -q 'deadline for a manifest' '$WORK/drip-tags.err'"
proxy_rules fp '{"method": "GET", "path": "/blobs/", "action": "drip", "interval": 0.3, "times": -1}'
check "a dripping blob fails below the minimum rate with exit 6, within 10 s" \
  within 10 bash -c "'$PI' pull '$FP_HOST/fp/img:v1' -o oci:pulled '${FAST[0]}' --retries 0 --timeout 2 -q 2>'$WORK/blob.err'; test \$? -eq 6"
check "... naming the rate" grep -q "too slow: fewer than 1024 bytes a second over 2 s" blob.err
check "... leaving no blob behind" bash -c "! ls pulled/blobs/sha256 2>/dev/null | grep -q ."
proxy_rules fp '{"method": "GET", "path": "/blobs/", "action": "endless", "times": -1}'
check "an endless blob ends at the descriptor's size (exit 8), within 20 s" \
  within 20 bash -c "'$PI' pull '$FP_HOST/fp/img:v1' -o oci:pulled2 --insecure --retries 0 --timeout 2 -q 2>'$WORK/endless-blob.err'; test \$? -eq 8"

# Token answers: the registry (here the proxy) sends clients to a token endpoint that
# never finishes, or drips.
challenge="Bearer realm=\\\"http://$FP_HOST/token\\\",service=\\\"fp\\\""
proxy_rules fp "{\"path\": \"^/v2/\$\", \"action\": \"status\", \"code\": 401, \"headers\": {\"WWW-Authenticate\": \"$challenge\"}, \"times\": -1}
{\"path\": \"^/token\", \"action\": \"endless\", \"times\": -1, \"piece\": \"{\\\"token\\\": \\\"\"}"
expect_fail "an endless token answer fails at its cap (exit 7)" 7 "larger than 8388608 bytes" \
  "$PI" inspect "$FP_HOST/fp/img:v1" "${FAST[@]}"
proxy_rules fp "{\"path\": \"^/v2/\$\", \"action\": \"status\", \"code\": 401, \"headers\": {\"WWW-Authenticate\": \"$challenge\"}, \"times\": -1}
{\"path\": \"^/token\", \"action\": \"drip\", \"interval\": 0.3, \"times\": -1}"
check "a dripping token answer fails at the deadline (exit 6), within 8 s" \
  within 8 bash -c "'$PI' inspect '$FP_HOST/fp/img:v1' --insecure --retries 0 --timeout 2 2>'$WORK/tok.err'; test \$? -eq 6"

# Package index pages (lock reads them without a registry).
mkdir -p lockproj
printf 'six==1.16.0\n' >lockproj/requirements.txt
printf 'python: {version: "3.11"}\nlayers:\n  - name: deps\n    wheels: {lock: requirements.lock}\n' >lockproj/spec.yaml
proxy_rules fp '{"path": "^/simple/", "action": "endless", "times": -1, "headers": {"Content-Type": "text/html"}, "piece": "<a href=x>x</a>"}'
check "an endless index page fails at its cap, within 30 s" \
  within 30 bash -c "'$PI' lock lockproj/requirements.txt --spec lockproj/spec.yaml -i 'http://$FP_HOST/simple/' --retries 0 --timeout 2 -q >/dev/null 2>'$WORK/index.err'; test \$? -ne 0"
check "... naming the cap" grep -q "larger than 67108864 bytes" index.err
proxy_rules fp '{"path": "^/simple/", "action": "drip", "interval": 0.3, "times": -1}'
check "a dripping index page fails at the deadline (exit 6), within 8 s" \
  within 8 bash -c "'$PI' lock lockproj/requirements.txt --spec lockproj/spec.yaml -i 'http://$FP_HOST/simple/' --retries 0 --timeout 2 -q >/dev/null 2>'$WORK/index2.err'; test \$? -eq 6"
proxy_rules fp ''

# --- 4 and 5: credential helpers ----------------------------------------------------
registry_start auth htpasswd "$WORK/srv"
mkdir -p bin
export PATH=$WORK/bin:$PATH
printf '#!/bin/sh\nexec 0<&-\nexit 1\n' >bin/docker-credential-deaf
printf '#!/bin/sh\nexec yes "{\\"Username\\": \\"alice\\"}"\n' >bin/docker-credential-endless
printf '#!/bin/sh\nwhile :; do printf x; sleep 0.3; done\n' >bin/docker-credential-drip
chmod +x bin/docker-credential-*
# A login to the open registry stores through credsStore: an input far larger than a
# pipe's buffer, so the write certainly meets a helper that is gone (EPIPE; SIGPIPE
# killed paddle-image there before, exit 141 without a word).
printf '{"credsStore": "deaf"}' >"$DOCKER_CONFIG/config.json"
big=$(head -c 300000 /dev/zero | tr '\0' 'p')
rc=0
printf '%s' "$big" | "$PI" login "$REG_HOST" --insecure -u alice --password-stdin --json >login.out 2>login.err || rc=$?
check "a credential helper that exits without reading its input is exit 5, not SIGPIPE's 141 (exit $rc)" test "$rc" -eq 5
check "... with its message and the --json error" \
  bash -c "grep -q 'docker-credential-deaf store failed' login.err && grep -q '\"exit_code\": 5' login.out"
printf '{"credsStore": "endless"}' >"$DOCKER_CONFIG/config.json"
expect_fail "a credential helper that prints without end is stopped at 1 MiB (exit 5)" 5 "printed more than 1 MiB" \
  "$PI" inspect "$AUTH_HOST/fp/img:v1" "${FAST[@]}"
printf '{"credsStore": "drip"}' >"$DOCKER_CONFIG/config.json"
check "a dripping credential helper is stopped at --timeout (exit 5), within 8 s" \
  within 8 bash -c "'$PI' inspect '$AUTH_HOST/fp/img:v1' --insecure --retries 0 --timeout 2 2>'$WORK/helper.err'; test \$? -eq 5"
check "... naming it" grep -q "docker-credential-drip get did not answer within 2 s" helper.err
rm -f "$DOCKER_CONFIG/config.json"

# --- 12: secrets in server-controlled text ------------------------------------------
"$PI" push oci:img:v1 "$AUTH_HOST/fp/img:v1" --insecure -u alice --password-stdin -q <<<"$AUTH_PASS" >/dev/null
proxy_start ap "$AUTH_HOST" "$WORK/srv"
proxy_rules ap '{"method": "GET", "path": "/manifests/", "action": "status", "code": 400, "echo_auth": true, "body": "{\"errors\": [{\"code\": \"MANIFEST_INVALID\", \"message\": \"bad\"}]} ", "times": -1}'
printf '%s' "$AUTH_PASS" | "$PI" inspect "$AP_HOST/fp/img:v1" --insecure --retries 0 -u alice --password-stdin --json \
  >echo.out 2>echo.err || true
basic=$(printf 'alice:%s' "$AUTH_PASS" | base64 -w0)
check "a registry error body that echoes the Authorization header shows no credential (stderr, --json)" \
  bash -c "grep -q . echo.err && ! grep -qF '$basic' echo.err echo.out && ! grep -qF '$AUTH_PASS' echo.err echo.out"
proxy_rules ap '{"method": "GET", "path": "/v2/fp/img/manifests/v1", "action": "status", "code": 307, "headers": {"Location": "/v2/fp/img/manifests/v1?sesame=open-SECRET-42&x=1"}, "times": 1}'
printf '%s' "$AUTH_PASS" | "$PI" inspect "$AP_HOST/fp/img:v1" --insecure --retries 0 -u alice --password-stdin \
  --log-level trace >trace.out 2>trace.err || true
check "a redirect's query value under any name stays out of --log-level trace" \
  bash -c "grep -q 'sesame=\*\*\*' trace.err && ! grep -q 'open-SECRET-42' trace.err trace.out"

# --- 6: SIGINT during a zstd level-19 layer; the layer bytes are what they were ------
# A fixed layer (text made from a seeded generator) has the gzip and zstd digests it had
# before the interruption checks went into the zstd loop.
mkdir -p pin/src
python3 - pin/src/data.txt 2000000 <<'PY'
import random, sys
r = random.Random(34)
words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9))) for _ in range(4000)]
with open(sys.argv[1], "w") as f:
    n = 0
    while n < int(sys.argv[2]):
        line = " ".join(r.choice(words) for _ in range(12)) + "\n"
        f.write(line)
        n += len(line)
PY
check "the fixed layer's input is the one the digests were recorded for" \
  bash -c "sha256sum pin/src/data.txt | grep -q ^879fb481ab830673a51484b42577fcb9dc438057d62afff018ba6ac5cce36730"
for c in gzip zstd; do
  printf 'image: {tags: [v1]}\ncompression: %s\nlayers:\n  - name: data\n    data: [{from: src/, to: /data/}]\n' "$c" >pin/$c.yaml
  "$PI" build pin/$c.yaml -q -o "oci:pin/out-$c:v1" --source-date-epoch 0 >/dev/null
done
check "the gzip layer's digest is unchanged" \
  test "$(layer_digests pin/out-gzip v1)" = sha256:6d75ac7b5b0b9c59c6ccfbde809ae00407f6c7c19133f4d907f595848f4ac17f
check "the zstd layer's digest is unchanged" \
  test "$(layer_digests pin/out-zstd v1)" = sha256:76ffef03d848dad4dad4174685c25ac5c64e4dc48c442fa95ab51e9a48207be6

mkdir -p z19/src
python3 - z19/src/data.txt 40000000 <<'PY'
import random, sys
r = random.Random(19)
words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9))) for _ in range(20000)]
with open(sys.argv[1], "w") as f:
    n = 0
    while n < int(sys.argv[2]):
        line = " ".join(r.choice(words) for _ in range(12)) + "\n"
        f.write(line)
        n += len(line)
PY
printf 'image: {tags: [v1]}\ncompression: {format: zstd, level: 19}\nlayers:\n  - name: data\n    data: [{from: src/, to: /data/}]\n' >z19/spec.yaml
# The deadline is in the work done after the signal, the CPU seconds the process spends
# from the signal to its exit (every thread's, from /proc and wait4): what "within about
# a second" means on an idle machine, and the same when five other tests share the two
# cores (the wall time then grew to 1.96 s for the same work). The wall time is bounded
# too, loosely, against a process that waits instead of stopping. -j 2: one zstd worker
# beside the thread that feeds it, as on CI's two cores, whatever this machine has.
python3 - "$PI" "$WORK/z19-cache" >z19.measure <<'PY'
import os, signal, subprocess, sys, time
env = dict(os.environ, CI="true")
with open("z19.out", "w") as out, open("z19.err", "w") as err:
    p = subprocess.Popen([sys.argv[1], "build", "z19/spec.yaml", "-o", "oci:z19/out:v1", "--cache-dir", sys.argv[2],
                          "-j", "2"], stdout=out, stderr=err, env=env)
    time.sleep(2.5)  # the tree is gathered in milliseconds: zstd is at work now
    tick = os.sysconf("SC_CLK_TCK")
    f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
    cpu_before = (int(f[11]) + int(f[12])) / tick  # utime, stime: fields 14 and 15
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - sent
    cpu = ru.ru_utime + ru.ru_stime - cpu_before
    rc = os.waitstatus_to_exitcode(status)
print(rc, "%.2f" % cpu, "%.2f" % wall)
PY
read -r rc cpu_after wall_after <z19.measure
check "SIGINT during a zstd level-19 layer of 40 MB exits 130 (exit $rc)" test "$rc" -eq 130
check "... within a second of work (README: about a second): $cpu_after CPU s after the signal, $wall_after s wall" \
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 1.0 and float(sys.argv[2]) < 5.0 else 1)" "$cpu_after" "$wall_after"
check "... naming the signal" grep -q "interrupted (SIGINT)" z19.err
check "... leaving no temporary file in the cache or the output" \
  bash -c "! find '$WORK/z19-cache' z19 -type f \( -name '*.tmp*' -o -path '*/.tmp/*' \) 2>/dev/null | grep -q ."

# --- 7: a base's facts and labels that no reader accepts are not copied --------------
site=usr/local/lib/python3.11/dist-packages
mkdir -p hb/src/$site/paddlepaddle_gpu-2.6.1.dist-info
{ printf 'Metadata-Version: 2.1\nName: paddlepaddle-gpu\nVersion: '; head -c 5000 /dev/zero | tr '\0' '7'; printf '\n'; } \
  >hb/src/$site/paddlepaddle_gpu-2.6.1.dist-info/METADATA
printf 'pip\n' >hb/src/$site/paddlepaddle_gpu-2.6.1.dist-info/INSTALLER
printf 'image: {tags: [v1]}\nlayers:\n  - name: root\n    files: [{from: src/usr/, to: /usr/}]\n' >hb/spec.yaml
"$PI" build hb/spec.yaml -q -o oci:hbase:v1 >/dev/null
# The config as a hand-made base might have it: ENV and an inherited label with a line
# separator and a quote.
patch_config hbase "c['config'].setdefault('Env', []).append('CUDNN_VERSION=8.9\\u2028evil: 1'); c['config'].setdefault('Labels', {})['io.paddle-image.cuda.version'] = '12.0\"\\nx'"
mkdir -p happ/src && echo 'print(1)' >happ/src/train.py
printf 'image: {tags: [v1]}\nbase: oci:../hbase:v1\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >happ/spec.yaml
check "a build on a base with unreadable facts succeeds" bash -c "'$PI' build happ/spec.yaml -o oci:happ-out:v1 2>happ.err >/dev/null"
check "... and says which facts it did not believe" bash -c \
  "grep -q 'cudnn.version .* (ENV CUDNN_VERSION), which is not a version: ignored' happ.err &&
   grep -q 'paddle.version .*(5000 bytes)' happ.err && grep -q 'label io.paddle-image.cuda.version=.* does not parse' happ.err"
check "... its labels are all readable: no io.paddle-image value with a quote, a line break or 5000 digits" \
  python3 - happ-out <<'PY'
import json, os, sys
lay = sys.argv[1]
blob = lambda d: os.path.join(lay, "blobs", "sha256", d.split(":")[1])
idx = json.load(open(os.path.join(lay, "index.json")))
m = json.load(open(blob(idx["manifests"][0]["digest"])))
labels = json.load(open(blob(m["config"]["digest"])))["config"].get("Labels", {})
for k, v in labels.items():
    if k.startswith("io.paddle-image."):
        assert len(v) < 100 and all(ch.isprintable() and ch != '"' for ch in v), (k, v)
assert "io.paddle-image.cudnn.version" not in labels and "io.paddle-image.paddle.version" not in labels, labels
PY
check "... and render k8s-job reads the image it made" \
  "$PI" render k8s-job happ/spec.yaml --image "$REG_HOST/fp/happ@$(manifest_digest happ-out v1)" --facts oci:happ-out:v1 --gpus 1 --no-gpu-affinity -o happ-job.yaml

# --- 2 and 3: a wheels layer plans against the target interpreter's environment ---------
# A base with Debian's python3.11, a venv with the same purepkg, a conda environment and
# its pkgs/ cache with another, and a site-packages under /etc whose RECORD climbs to
# /etc/shadow; and a METADATA stored as a hard link (conda links environments from pkgs/).
mkdir -p envs/root
dist() { # SITE NAME VERSION RECORD
  mkdir -p "envs/root/$1/$2-$3.dist-info" "envs/root/$1/$2"
  printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "$2" "$3" >"envs/root/$1/$2-$3.dist-info/METADATA"
  printf 'pip\n' >"envs/root/$1/$2-$3.dist-info/INSTALLER"
  printf '%s' "$4" >"envs/root/$1/$2-$3.dist-info/RECORD"
  echo "x = 1" >"envs/root/$1/$2/__init__.py"
}
mkdir -p envs/root/usr/bin envs/root/opt/venv/bin envs/root/etc
printf '\177ELF' >envs/root/usr/bin/python3.11
printf 'home = /usr/bin\ninclude-system-site-packages = false\n' >envs/root/opt/venv/pyvenv.cfg
echo 'root:*:19000:0:99999:7:::' >envs/root/etc/shadow
dist opt/venv/lib/python3.11/site-packages purepkg 1.0 $'purepkg/__init__.py,,\n'
dist opt/conda/pkgs/purepkg-0.8-py_0/site-packages purepkg 0.8 $'purepkg/__init__.py,,\n'
dist opt/conda/lib/python3.11/site-packages purepkg 0.8 $'purepkg/__init__.py,,\n'
rm envs/root/opt/conda/lib/python3.11/site-packages/purepkg-0.8.dist-info/METADATA
ln envs/root/opt/conda/pkgs/purepkg-0.8-py_0/site-packages/purepkg-0.8.dist-info/METADATA \
  envs/root/opt/conda/lib/python3.11/site-packages/purepkg-0.8.dist-info/METADATA
dist etc/lib/python3/site-packages purepkg 0.9 $'purepkg/__init__.py,,\n../../../shadow,,\n'
printf 'image: {tags: [v1]}\nlayers:\n  - name: root\n    files: [{from: root/, to: /}]\n' >envs/spec.yaml
"$PI" build envs/spec.yaml -q -o oci:envbase:v1 >/dev/null
check "inspect --base-view sees the hard-linked METADATA in the conda environment (3)" bash -c \
  "'$PI' inspect --base-view oci:envbase:v1 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); locs=[d[\"location\"] for d in j[\"facts\"][\"python\"]]; assert \"opt/conda/lib/python3.11/site-packages/purepkg-0.8.dist-info\" in locs, locs; assert len(locs) == 4, locs'"
mkdir -p envapp/wheels
cp "$WHEELS"/purepkg-1.0-py3-none-any.whl envapp/wheels/
grep '^purepkg==' "$WHEELS/wheels.lock" >envapp/wheels.lock
printf 'image: {tags: [v1]}\nbase: oci:../envbase:v1\nlayers:\n  - name: deps\n    wheels: {dir: wheels/, lock: wheels.lock}\n' >envapp/spec.yaml
check "a wheels layer on that base builds" "$PI" build envapp/spec.yaml -q -o oci:envapp-out:v1 --metadata-file envapp.json
check "... installs purepkg for the target (not 'already satisfied' by the venv's copy) and replaces nothing elsewhere (2)" \
  python3 - envapp-out envapp.json <<'PY'
import json, os, sys, tarfile
lay, meta = sys.argv[1:3]
blob = lambda d: os.path.join(lay, "blobs", "sha256", d.split(":")[1])
idx = json.load(open(os.path.join(lay, "index.json")))
m = json.load(open(blob(idx["manifests"][0]["digest"])))
names = tarfile.open(blob(m["layers"][-1]["digest"])).getnames()
assert any(n.startswith("usr/local/lib/python3.11/dist-packages/purepkg/") for n in names), names
wh = [n for n in names if os.path.basename(n).startswith(".wh.")]
assert not wh, wh
layers = json.load(open(meta))["layers"]
assert all(not l.get("replacements") for l in layers), [l.get("replacements") for l in layers]
PY

# --- 8, 10, 11: signing -------------------------------------------------------------
export COSIGN_PASSWORD=fp-test
"$PI" key generate -o fpk >/dev/null 2>&1
mkdir -p sproj/src && echo 'print(2)' >sproj/src/app.py
printf 'image: {name: example.com/fp/signed, tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >sproj/spec.yaml
check "build --sign with two --push targets" "$PI" build sproj/spec.yaml -q --sign --key fpk.key --insecure \
  --push "$REG_HOST/fp/two-a:v1" --push "$REG_HOST/fp/two-b:v1" --digest-file two.digest
d=$(head -1 two.digest | sed 's/.*@//')
for repo in two-a two-b; do
  "$PI" pull "$REG_HOST/fp/$repo:v1" -o "oci:$repo-pulled" --insecure -q >/dev/null
  check "the SBOM attested in $repo names $repo (11)" python3 - "$repo-pulled" "$d" "$REG_HOST/fp/$repo" <<'PY'
import base64, json, os, sys
lay, digest, want = sys.argv[1:4]
blob = lambda d: open(os.path.join(lay, "blobs", "sha256", d.split(":")[1]), "rb").read()
idx = json.load(open(os.path.join(lay, "index.json")))
att = [m for m in idx["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == digest.replace(":", "-") + ".att"]
assert att, "no .att in the pulled layout"
names = []
for layer in json.loads(blob(att[0]["digest"]))["layers"]:
    env = json.loads(blob(layer["digest"]))
    st = json.loads(base64.b64decode(env["payload"]))
    if st["predicateType"].startswith("https://spdx.dev"):
        names.append(st["predicate"]["name"])
assert names and all(n.split("@")[0] == want for n in names), (names, want)
PY
done

# A registry that fails on the attestation's blob is the registry's failure (exit 7),
# not a failed verification (11).
att_layer=$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
  "http://$REG_HOST/v2/fp/two-a/manifests/${d/:/-}.att" | python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
proxy_rules fp "{\"method\": \"GET\", \"path\": \"/blobs/$att_layer\", \"action\": \"status\", \"code\": 503, \"times\": -1}"
expect_fail "a 503 on the attestation blob after every retry is exit 7, not 11 (8)" 7 "503" \
  "$PI" verify "$FP_HOST/fp/two-a:v1" --key fpk.pub --insecure --retries 0 --identity "$REG_HOST/fp/two-a:v1"
proxy_rules fp ''
check "... and with the registry well again, verify passes" "$PI" verify "$FP_HOST/fp/two-a:v1" --key fpk.pub --insecure --identity "$REG_HOST/fp/two-a:v1"

# verify-blob: a 1 GB --signature file is refused by its size, not read.
echo data >blob.txt
"$PI" sign-blob blob.txt --key fpk.key --output-signature blob.sig >/dev/null 2>&1
truncate -s 1G huge.sig
check "verify-blob with a 1 GB signature file fails (exit 11) at once, in little memory (10)" \
  within 3 bash -c "/usr/bin/time -f %M -o vb.rss '$PI' verify-blob blob.txt --key fpk.pub --signature huge.sig 2>vb.err; test \$? -eq 11"
check "... naming its size" grep -q "1073741824 bytes; a signature is under 4 KiB" vb.err
check "... under 64 MB of memory" bash -c "test \$(tail -1 vb.rss) -lt 65536"
check "... while the real signature verifies" "$PI" verify-blob blob.txt --key fpk.pub --signature blob.sig

# --- 13: file names with line breaks, control characters in flags ------------------
mkdir -p nl/src
printf 'image: {tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >nl/spec.yaml
ln -s /etc/passwd "nl/src/$(printf 'a\nb.py')"
expect_fail "a source file whose name has a newline is named on one line (exit 3)" 3 'a\\nb\.py' \
  "$PI" build nl/spec.yaml -q -o oci:nl-out
check "... no line of stderr starts with the rest of the name" bash -c "! grep -q '^b\.py' '$WORK/err.txt'"
expect_fail "--checkpoint-path with a control character is a usage error" 2 "control character" \
  "$PI" render k8s-job img.yaml --image "$REG_HOST/fp/img@$(manifest_digest img v1)" --facts oci:img:v1 --gpus 1 \
  --checkpoint-path "$(printf '/ck\001x')"

# docker-archive manifests that do not parse: our words, not the JSON library's.
mkdir -p da1 da2
printf '[{"Config": "c.json", "Layers": [' >da1/manifest.json
printf '[{"Config": 5, "Layers": []}]' >da2/manifest.json
tar -C da1 -cf da1.tar manifest.json
tar -C da2 -cf da2.tar manifest.json
expect_fail "a docker-archive whose manifest.json is cut short says where (exit 3)" 3 \
  "manifest.json is not valid JSON \(a syntax error at byte" "$PI" copy docker-archive:da1.tar oci:da-out:x -q
check "... in its own words" bash -c "! grep -q 'json.exception\|parse_error' '$WORK/err.txt'"
expect_fail "a docker-archive whose manifest.json has the wrong shape says what it should be (exit 3)" 3 \
  "not a docker-archive manifest \(an array whose first object has a string Config" "$PI" copy docker-archive:da2.tar oci:da-out:x -q
check "... in its own words" bash -c "! grep -q 'json.exception\|type_error' '$WORK/err.txt'"

finish
