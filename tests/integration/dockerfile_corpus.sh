#!/usr/bin/env bash
# The Dockerfile corpus (tests/corpus/dockerfiles/: Dockerfiles shaped like the Paddle
# ecosystem's own and its users': OCR, detection, NLP, serving, PaddleX, personal
# deployments; pip lines of every shape, apt-get, ARG/ENV, wget/curl + tar, git clone,
# multi-stage, chmod, ln -s, useradd, wildcard COPY, ADD URL) migrated by
# `init --from-dockerfile`: the lines each leaves not mapped are the ones
# tests/corpus/expected.txt names, none with the generic RUN hint. Then every migrated
# spec is built against local stand-ins (tests/support/corpus_standins.py: the test's
# Debian base, a local package index, the signed apt repository, a file server, local
# git repositories), after the lock commands init printed, and the images hold what
# the Dockerfiles put there. The figures go to corpus-report.txt (printed at the end).
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
# Nothing of this host's pip or proxy settings, nor the user's netrc: the stand-ins are
# all the locks and builds see (a host's PIP_FIND_LINKS is a find-links of every lock).
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export PIP_CONFIG_FILE=/dev/null
: >"$WORK/empty.netrc"
export NETRC=$WORK/empty.netrc
CORPUS=$ROOT/tests/corpus
REPO=$FIXTURES/debs-repo

# The base's pip-installed packages, as a Paddle image has them: opencv-python (which
# 25 uninstalls).
mkdir -p base-wheels
/usr/bin/python3 - "$SUPPORT/make-index-wheels.py" base-wheels <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("miw", sys.argv[1])
miw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(miw)
miw.write_wheel(sys.argv[2], "opencv_python", "4.6.0.66", "py3-none-any", [("cv2/__init__.py", "GUI = True\n")])
PY
cat >base.yaml <<YAML
base: scratch
compression: {format: gzip, level: 1}   # built once, unpacked by no one: cheap to compress
python: {version: "3.11", interpreter: /usr/bin/python3.11, site_packages: /usr/local/lib/python3.11/dist-packages,
         scripts_dir: /usr/local/bin, prefix: /usr/local, glibc: "2.36"}
layers:
  - name: rootfs
    files:
      - {from: $BASE_ROOTFS, to: /, allow_absolute_symlinks: true, allow_outside: true}
  - name: pip
    wheels: base-wheels
config:
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
YAML
check "the stand-in base builds from the Debian rootfs" "$PI" build base.yaml -q -o oci:base:bookworm

# The file server (downloads and the apt repository), up before the specs name it.
mkdir -p files wheels git
cp -r "$REPO/repo" files/apt
/usr/bin/python3 - files "$WORK/files.port" <<'PY' &
import http.server, os, socketserver, sys
os.chdir(sys.argv[1])
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
with S(("127.0.0.1", 0), Quiet) as s:
    open(sys.argv[2] + ".tmp", "w").write(str(s.server_address[1])); os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    s.serve_forever()
PY
FILES_PID=$!
INDEX_PID=
trap 'kill $FILES_PID $INDEX_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s files.port ]] && break; sleep 0.1; done
FILES_URL=http://127.0.0.1:$(cat files.port)

# Migrate each Dockerfile, then point its spec at the stand-ins (the index URL is filled
# in once the index serves the wheels the stand-ins wrote).
names=()
init_failed=()
for d in "$CORPUS"/dockerfiles/*/; do
  n=$(basename "$d")
  names+=("$n")
  cp -r "$d" "e-$n"
  if ! (cd "e-$n" && "$PI" init --from-dockerfile Dockerfile . --json >init.json 2>init.err); then
    init_failed+=("$n")
    continue
  fi
  /usr/bin/python3 "$SUPPORT/corpus_standins.py" "e-$n" --base "oci:$WORK/base:bookworm" \
    --index "@INDEX@" --wheels wheels --files-url "$FILES_URL" --files files --git "$WORK/git" \
    --debs-url "$FILES_URL/apt" --keyring "$REPO/keyring.gpg" --pi "$PI" >"e-$n/standins.txt" 2>&1 || init_failed+=("$n")
done
check "all ${#names[@]} Dockerfiles migrate and take their stand-ins" test -z "${init_failed[*]}"
check "... at least 20 of them" test "${#names[@]}" -ge 20

# What was left: the figures, and the lines against expected.txt.
/usr/bin/python3 - "$CORPUS/expected.txt" "${names[@]}" >corpus-check.txt 2>&1 <<'PY' || true
import json, sys
expected = {}
for line in open(sys.argv[1]):
    if line.strip() and not line.startswith("#"):
        name, *lines = line.split()
        expected[name] = sorted(int(x) for x in lines if x != "-")
names = sys.argv[2:]
report, bad, generic, total, clean = [], [], 0, 0, 0
for n in names:
    j = json.load(open(f"e-{n}/init.json"))
    got = sorted({u["line"] for u in j["unmapped"]})
    clean += not got
    total += len(got)
    report.append(f"{n}: " + ("nothing left" if not got else f"{len(got)} line(s) left") +
                  (f", {len(j['left_out'])} step(s) left out as needing nothing" if j["left_out"] else ""))
    for u in j["unmapped"]:
        report.append(f"  {u['line']}: {u['instruction']}\n      {u['reason']}")
        generic += u["reason"].startswith("RUN executes a command at build time")
    if got != expected.get(n):
        bad.append(f"{n}: not mapped {got}, expected {expected.get(n)}")
head = f"{clean} of {len(names)} Dockerfiles map with nothing left; {total} line(s) left in all, {generic} with the generic RUN hint"
open("corpus-report.txt", "w").write(head + "\n" + "\n".join(report) + "\n")
print("\n".join(bad) if bad else head)
sys.exit(1 if bad or generic else 0)
PY
check "the lines left not mapped are expected.txt's, none with the generic RUN hint" \
  bash -c "cat corpus-check.txt >&2; ! grep -q 'expected\\|[1-9][0-9]* with the generic' corpus-check.txt"

# The local index, serving the wheels the requirements files pin.
/usr/bin/python3 "$SUPPORT/index_server.py" --root wheels --port-file index.port --log index.log 2>index.err &
INDEX_PID=$!
for _ in $(seq 100); do [[ -s index.port ]] && break; sleep 0.1; done
INDEX_URL=http://127.0.0.1:$(cat index.port)/simple/
sed -i "s#@INDEX@#$INDEX_URL#" e-*/spec.yaml

# Each spec: the lock commands init printed (debs, wheels, sources), then the build;
# build-refused.txt names the builds refused for a known limit, with their error.
built=()
failed=()
refused=()
declare -A refusal
while read -r n pattern; do
  [[ -z $n || $n == \#* ]] || refusal[$n]=$pattern
done <"$CORPUS/build-refused.txt"
for n in "${names[@]}"; do
  ok=1
  while IFS= read -r cmd; do
    [[ -n $cmd ]] || continue
    read -ra argv <<<"${cmd#paddle-image }"
    (cd "e-$n" && "$PI" "${argv[@]}" -q >>lock.log 2>&1) || { ok=0; echo "$n: $cmd failed" >>build-failures.txt; }
  done < <(/usr/bin/python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["commands"]))' "e-$n/init.json")
  if ((ok)) && (cd "e-$n" && "$PI" build spec.yaml -q --json -o "oci:$WORK/images/$n:v1" >build.json 2>build.err); then
    built+=("$n")
    [[ -z ${refusal[$n]:-} ]] || echo "$n: built, but build-refused.txt expects: ${refusal[$n]}" >>build-failures.txt
  elif ((ok)) && [[ -n ${refusal[$n]:-} ]] && grep -qE -- "${refusal[$n]}" "e-$n/build.err"; then
    refused+=("$n: $(head -1 "e-$n/build.err")")
  else
    failed+=("$n")
    { echo "$n:"; tail -3 "e-$n/lock.log" 2>/dev/null; tail -3 "e-$n/build.err" 2>/dev/null; } >>build-failures.txt
  fi
done
check "every migrated spec builds against the stand-ins but build-refused.txt's (${#built[@]} of ${#names[@]} built)" \
  bash -c "test -z '${failed[*]}' -a ! -s build-failures.txt || { cat build-failures.txt >&2; false; }"
{
  echo "${#built[@]} of ${#names[@]} migrated specs built against the stand-ins; refused as build-refused.txt expects:"
  printf '  %s\n' "${refused[@]}"
} >>corpus-report.txt

# What the images hold, against the Dockerfiles.
layer_list() { # ENTRY LAYER -> "MODE PATH [-> TARGET]" per member
  local blob
  blob=$(/usr/bin/python3 -c 'import json,sys; print([l["digest"] for l in json.load(open(sys.argv[1]))["layers"] if l["name"] == sys.argv[2]][0].split(":")[1])' "e-$1/build.json" "$2")
  tar -tvzf "images/$1/blobs/sha256/$blob" | awk '{ $2 = $3 = $4 = $5 = ""; print }' | tr -s ' '
}
export -f layer_list
check "08: ln -s became the symlink, chmod +x the copied file's mode" bash -c \
  "layer_list 08-entrypoint-chmod-ln links | grep -q '^lrwxrwxrwx usr/local/bin/start -> /usr/local/bin/entrypoint.sh' &&
   layer_list 08-entrypoint-chmod-ln bin | grep -q '^-rwxr-xr-x usr/local/bin/entrypoint.sh'"
check "02: wget + tar and curl + tar -C became extracted downloads (the tars removed)" bash -c \
  "layer_list 02-ppocr-models-wget ch_pp-ocrv4_det_infer >l02 && grep -q ' models/ch_PP-OCRv4_det_infer/inference.pdiparams' l02 &&
   ! grep -q '\\.tar$' l02"
check "13: git clone && git checkout v2.7.1 became the tag's tree, without .git" bash -c \
  "layer_list 13-clone-tag-checkout paddleocr | grep -q ' PaddleOCR/tools/train.py' && ! layer_list 13-clone-tag-checkout paddleocr | grep -q '\\.git/'"
check "... pinned in the sources lock to the tag's commit" \
  grep -q "\"commit\": \"$(git -C git/PaddleOCR rev-parse 'v2.7.1^{commit}')\"" e-13-clone-tag-checkout/spec.sources.lock
check "07: useradd -m -u 1000 became the accounts layer (passwd, group, a home of paddle's), USER paddle the name" bash -c \
  "'$PI' inspect oci:images/07-nonroot-user:v1 --json | /usr/bin/python3 -c 'import json,sys; c = json.load(sys.stdin)[\"config\"][\"config\"]; assert c[\"User\"] == \"paddle\", c; assert \"PYTHONPATH=/home/paddle/app\" in c[\"Env\"], c[\"Env\"]' &&
   layer_list 07-nonroot-user accounts >l07 && grep -q ' etc/passwd$' l07 && grep -q ' etc/group$' l07 &&
   grep -qx 'drwxr-xr-x home/paddle/' l07"
check "04: pip install paddlepaddle-gpu==2.4.0.post116 -f URL became a wheels layer that installs it" bash -c \
  "layer_list 04-paddle-from-find-links deps | grep -q 'paddlepaddle_gpu-2.4.0.post116.dist-info/METADATA'"
check "12: apt-get install of OpenCV's libraries became the debs layer, locked with its closure" bash -c \
  "grep -q '\"name\": \"libgl1\"' e-12-ppstructure-opencv/debs.lock && grep -q '\"name\": \"libsm6\"' e-12-ppstructure-opencv/debs.lock"
check "12: pip install of a pinned name and a range became a requirements input that lock resolved for the base" bash -c \
  "grep -qx 'paddleclas>=2.5' e-12-ppstructure-opencv/requirements-deps.txt &&
   grep -q '^paddleclas==2\.5' e-12-ppstructure-opencv/requirements-deps.lock &&
   grep -A2 '^paddleclas==' e-12-ppstructure-opencv/requirements-deps.lock | grep -q '# via requirements-deps.txt:4'"
check "22: ADD --checksum became a pinned download, git clone + git -C checkout COMMIT a git source" bash -c \
  "layer_list 22-clone-at-commit pp_liteseg_stdc1 | grep -q ' src/weights/pp_liteseg_stdc1.pdparams' &&
   layer_list 22-clone-at-commit paddleseg | grep -q ' src/PaddleSeg/tools/train.py'"
check "24: mkdir -p became directory rules (the parents with them), chmod 777 and -m 0700 their modes" bash -c \
  "layer_list 24-ocr-dirs-mkdir dirs >l24 && grep -qx 'drwxr-xr-x PaddleOCR/inference/' l24 &&
   grep -qx 'drwxrwxrwx PaddleOCR/output/' l24 && grep -qx 'drwx------ PaddleOCR/logs/' l24 &&
   grep -qx 'drwxr-xr-x PaddleOCR/' l24"
check "11: COPY *.py /app/ became a wildcard rule: train.py is in the layer, matched when the spec was read" bash -c \
  "grep -qF \"from: '*.py'\" e-11-wildcard-copy/spec.yaml && layer_list 11-wildcard-copy app | grep -q ' app/train.py'"
check "25: pip uninstall -y opencv-python became a layer of whiteouts of the base's copy, between the two installs" bash -c \
  "layer_list 25-ocr-opencv-headless uninstall >l25 &&
   grep -q 'usr/local/lib/python3.11/dist-packages/.wh.opencv_python-4.6.0.66.dist-info' l25 &&
   grep -q 'usr/local/lib/python3.11/dist-packages/.wh.cv2' l25 &&
   layer_list 25-ocr-opencv-headless deps-2 | grep -q 'opencv_python_headless-4.6.0.66.dist-info/METADATA' &&
   /usr/bin/python3 -c 'import json,sys; n=[l[\"name\"] for l in json.load(open(sys.argv[1]))[\"layers\"]]; assert n.index(\"deps\") < n.index(\"uninstall\") < n.index(\"deps-2\"), n' e-25-ocr-opencv-headless/build.json"
check "26: COPY --from of a FROM-only stage and of an image became image sources, pinned by lock --sources" bash -c \
  "grep -q '\"images\"' e-26-triton-copy-from/spec.sources.lock &&
   layer_list 26-triton-copy-from tritonserver | grep -q ' opt/tritonserver/standin.txt' &&
   layer_list 26-triton-copy-from tmp | grep -q ' tmp/tritonclient-2.15.0-py3-none-any.whl'"
cat corpus-report.txt
finish
