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

finish
