#!/usr/bin/env bash
# Self-test of ci_validate.py: proves that it accepts the golden CI files and other valid
# pipelines, and rejects each kind of mistake it is there to catch (so a green CI-template
# test means something). Every rejection starts from a valid file with one change.
#
#   bash tests/support/ci-validate-selftest.sh     (TEST_WORK=DIR keeps the files there)
# Needs only /usr/bin/python3 with python3-yaml and python3-jsonschema; no network.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GOLDEN=$(cd "$HERE/../golden/templates" && pwd)
PY=/usr/bin/python3
VALIDATE="$HERE/ci_validate.py"
if [[ -n ${TEST_WORK:-} ]]; then
  W=$TEST_WORK
  rm -rf "$W"
  mkdir -p "$W"
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/ci-selftest.XXXXXX")
  trap 'rm -rf "$W"' EXIT
fi
PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }

# valid DESCRIPTION MODE FILE...: the validator exits 0
valid() {
  local d=$1 mode=$2 rc=0
  shift 2
  "$PY" "$VALIDATE" "$mode" "$@" >"$W/out.txt" 2>&1 || rc=$?
  if [[ $rc -eq 0 ]]; then pass "$d"; else fail "$d (exit $rc): $(head -5 "$W/out.txt")"; fi
}
# invalid DESCRIPTION MODE PATTERN FILE: the validator exits 1, prints a line matching
# PATTERN (grep -E) and every line it prints has the documented shape FILE: path: message
invalid() {
  local d=$1 mode=$2 pat=$3 rc=0
  shift 3
  "$PY" "$VALIDATE" "$mode" "$@" >"$W/out.txt" 2>&1 || rc=$?
  if [[ $rc -ne 1 ]]; then
    fail "$d (exit $rc, wanted 1): $(head -5 "$W/out.txt")"
  elif ! grep -qE -- "$pat" "$W/out.txt"; then
    fail "$d (no line matches /$pat/): $(head -5 "$W/out.txt")"
  elif grep -vqE '^[^:]+: [^:]+: .+$' "$W/out.txt"; then
    fail "$d: a line not of the form 'FILE: path: message': $(grep -vE '^[^:]+: [^:]+: .+$' "$W/out.txt" | head -2)"
  else
    pass "$d"
  fi
}
# mutate FROM NAME SED-SCRIPT: $W/NAME.yml is FROM with one change (which must apply)
mutate() {
  sed -e "$3" "$1" >"$W/$2.yml"
  if cmp -s "$1" "$W/$2.yml"; then
    fail "mutation $2 changed nothing"
  fi
}

# --- valid: the golden files and pipelines that use more of the syntax --------------------
shopt -s nullglob
gh_golden=("$GOLDEN"/*github*.yml "$GOLDEN"/*github*.yaml)
gl_golden=("$GOLDEN"/*gitlab*.yml "$GOLDEN"/*gitlab*.yaml)
shopt -u nullglob
if [[ ${#gh_golden[@]} -eq 0 || ${#gl_golden[@]} -eq 0 ]]; then
  fail "no golden GitHub workflow or GitLab file in $GOLDEN"
fi
for f in "${gh_golden[@]}"; do valid "golden $(basename "$f") is a valid GitHub workflow" github "$f"; done
for f in "${gl_golden[@]}"; do valid "golden $(basename "$f") is a valid GitLab CI file" gitlab "$f"; done
GH=${gh_golden[0]}
GL=${gl_golden[0]}

cat >"$W/rich.yml" <<'EOF'
name: rich
on: [push, pull_request]
env:
  ON: yes
concurrency:
  group: ${{ github.workflow }}-${{ github.ref }}
  cancel-in-progress: true
jobs:
  test:
    strategy:
      matrix:
        py: ["3.10", "3.11"]
        include:
          - py: "3.12"
            experimental: true
    runs-on: ${{ matrix.py == '3.12' && 'ubuntu-24.04' || 'ubuntu-latest' }}
    services:
      redis:
        image: redis:7
        ports: ["6379:6379"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.py }}
      - uses: ./.github/actions/local
      - uses: docker://alpine:3.20
        with:
          args: echo hi
      - uses: github/codeql-action/init@v3
      - id: fmt
        run: echo "x=${{ format('{0}}}', 'a') }}" >> "$GITHUB_OUTPUT"
        shell: bash
        working-directory: src
      - if: steps.fmt.outputs.x != '' && (github.event_name == 'push')
        run: echo "${{ steps.fmt.outputs.x }} awk '{print $1}}'"
  release:
    needs: [test]
    if: ${{ needs.test.result == 'success' }}
    uses: octo/workflows/.github/workflows/release.yml@v1
    secrets: inherit
  local:
    needs: release
    uses: ./.github/workflows/local.yml
    with:
      version: ${{ needs.release.outputs.version }}
EOF
valid "a workflow with a matrix, services, every kind of uses, reusable workflows, expressions with }} in strings" github "$W/rich.yml"
printf 'on:\n  workflow_dispatch:\njobs:\n  a:\n    runs-on: [self-hosted, linux]\n    steps:\n      - run: "true"\n' >"$W/on-null.yml"
valid "'on:' with a null event and a runs-on list (on: is a key, not the boolean true)" github "$W/on-null.yml"

cat >"$W/rich-gitlab.yml" <<'EOF'
stages: [lint, build, test, deploy]
default:
  image: debian:12
  retry: 1
  tags: [docker]
include:
  - local: /ci/extra.yml
variables:
  A: "1"
  B:
    value: "x"
    description: a variable with a description
workflow:
  rules:
    - if: $CI_COMMIT_BRANCH
.base:
  before_script: [echo base]
  variables: {C: "2"}
  stage: build
.scripts:
  setup: [echo setup]
lint:
  stage: lint
  script: echo lint
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
      when: always
    - when: never
build:
  extends: .base
  script:
    - !reference [.scripts, setup]
    - make
  artifacts:
    paths: [out/]
    exclude: [out/*.tmp]
    expire_in: 1 week
    reports:
      junit: report.xml
  cache:
    key: build
    paths: [.cache/]
test a:
  needs:
    - build
    - job: lint
      artifacts: false
    - job: maybe
      optional: true
  dependencies: [build]
  parallel: 2
  script: [make test]
  allow_failure:
    exit_codes: [3]
deploy:
  stage: deploy
  when: manual
  environment: production
  trigger:
    project: team/deployer
from-elsewhere:
  extends: .from-include
EOF
valid "a GitLab file with default, include, extends, !reference, rules, needs mappings, trigger" gitlab "$W/rich-gitlab.yml"

# --- GitHub workflows: each mistake, one at a time ------------------------------------------
mutate "$GH" gh-runs 's/^\(      *\)run: /\1runs: /'
invalid "a misspelt step key (runs for run)" github \
  "jobs\.[a-z_-]+\.steps\[[0-9]+\]: Additional properties are not allowed \('runs' was unexpected\)" "$W/gh-runs.yml"
mutate "$GH" gh-no-runs-on '0,/^    runs-on: /{/^    runs-on: /d}'
invalid "a job without runs-on" github "jobs\.[a-z_-]+: 'runs-on' is a required property" "$W/gh-no-runs-on.yml"
mutate "$GH" gh-open-expr '0,/\${{ secrets\.\([A-Z_]*\) }}/s//${{ secrets.\1 }/'
invalid "an unbalanced \${{ (one closing brace)" github "\.env\.[A-Z_]+: '\\$\{\{' without a closing '\}\}'" "$W/gh-open-expr.yml"
mutate "$GH" gh-open-expr2 '0,/\${{ secrets\.\([A-Z_]*\) }}/s//${{ secrets.\1/'
invalid "an unbalanced \${{ (no closing braces)" github "'\\$\{\{' without a closing '\}\}'" "$W/gh-open-expr2.yml"
mutate "$GH" gh-paren "0,/|| 'main' }}/s//|| ('main' }}/"
invalid "an unclosed ( in an expression" github "unclosed '\(' in expression" "$W/gh-paren.yml"
mutate "$GH" gh-quote "0,/|| 'main' }}/s//|| 'main }}/"
invalid "an unterminated string in an expression" github "unterminated string in expression" "$W/gh-quote.yml"
mutate "$GH" gh-empty-expr '0,/\${{ secrets\.\([A-Z_]*\) }}/s//${{ }}/'
invalid "an empty expression" github "empty expression" "$W/gh-empty-expr.yml"
mutate "$GH" gh-needs 's/^    needs: build$/    needs: biuld/'
invalid "needs naming a job the workflow does not have" github \
  "jobs\.digest\.needs: 'biuld' is not a job of this workflow \(did you mean 'build'\?\)" "$W/gh-needs.yml"
mutate "$GH" gh-needs-list 's/^    needs: build$/    needs: [build, tset]/'
invalid "needs as a list, one name missing" github "jobs\.digest\.needs\[1\]: 'tset' is not a job" "$W/gh-needs-list.yml"
mutate "$GH" gh-cycle '0,/^    runs-on: ubuntu-latest$/s//    needs: digest\n    runs-on: ubuntu-latest/'
invalid "needs that form a cycle" github "needs form a cycle: (build -> digest -> build|digest -> build -> digest)" "$W/gh-cycle.yml"
mutate "$GH" gh-uses 's/uses: actions\/checkout@v4/uses: actions\/checkout/'
invalid "uses without @ref" github "steps\[0\]\.uses: 'actions/checkout': an action is owner/repo@ref" "$W/gh-uses.yml"
mutate "$GH" gh-uses2 's/uses: actions\/checkout@v4/uses: checkout@v4/'
invalid "uses without an owner" github "steps\[0\]\.uses: 'checkout@v4'" "$W/gh-uses2.yml"
mutate "$GH" gh-step-id 's/steps\.build\.outputs\.digest/steps.biuld.outputs.digest/'
invalid "an output naming a step id the job does not have" github \
  "jobs\.build\.outputs\.digest: 'steps\.biuld' names no step of job 'build' \(did you mean 'build'\?\)" "$W/gh-step-id.yml"
mutate "$GH" gh-needs-ctx 's/needs\.build\.outputs\.digest/needs.buildx.outputs.digest/'
invalid "needs.JOB naming a job the job does not need" github "'needs\.buildx': job 'digest' does not need 'buildx'" "$W/gh-needs-ctx.yml"
mutate "$GH" gh-on 's/^"on":$/no:/'
invalid "no 'on' (the key misspelt)" github "\(document\): 'on' is a required property" "$W/gh-on.yml"
mutate "$GH" gh-dup 's/^    container: debian:12$/    container: debian:12\n    container: debian:13/'
invalid "a duplicate key" github "not valid YAML: duplicate key 'container'" "$W/gh-dup.yml"
mutate "$GH" gh-job-key 's/^    container: debian:12$/    containers: debian:12/'
invalid "a misspelt job key" github "jobs\.build: Additional properties are not allowed \('containers' was unexpected\)" "$W/gh-job-key.yml"
mutate "$GH" gh-top-key 's/^jobs:$/job:/'
invalid "a misspelt top-level key" github "\(document\): Additional properties are not allowed \('job' was unexpected\)" "$W/gh-top-key.yml"
mutate "$GH" gh-event 's/^  push:$/  pushed:/'
invalid "an unknown event" github "^[^:]+: on: " "$W/gh-event.yml"
printf 'on: push\njobs:\n  a:\n    runs-on: x\n    steps: [{run: "a", id: s}, {run: "b", id: s}]\n' >"$W/gh-step-dup.yml"
invalid "two steps with one id" github "jobs\.a\.steps: step id 's' is used more than once" "$W/gh-step-dup.yml"
printf 'on: push\njobs:\n  a:\n    runs-on: x\n    steps: [{run: "a"}]\n  b:\n    uses: octo/repo/wf.yml\n' >"$W/gh-job-uses.yml"
invalid "a reusable workflow without @ref" github "jobs\.b\.uses: 'octo/repo/wf\.yml': a reusable workflow is" "$W/gh-job-uses.yml"
printf 'on: push\njobs:\n  a:\n    runs-on: x\n    steps: [{run: "a"\n' >"$W/gh-yaml.yml"
invalid "YAML that does not parse" github "^[^:]+: \(document\): not valid YAML: " "$W/gh-yaml.yml"

# --- GitLab files -----------------------------------------------------------------------------
mutate "$GL" gl-stage 's/^  stage: deploy$/  stage: publish/'
invalid "a job with an undeclared stage" gitlab \
  "digest\.stage: stage 'publish' is not declared in stages \(stages: \.pre, build, deploy, \.post\)" "$W/gl-stage.yml"
mutate "$GL" gl-stage-default '/^stages: /d; s/^  stage: deploy$/  stage: release/'
invalid "an undeclared stage when stages: is absent (the defaults)" gitlab \
  "digest\.stage: stage 'release' is not declared in the default stages" "$W/gl-stage-default.yml"
mutate "$GL" gl-nostage 's/^stages: \[build, deploy\]$/stages: [build, deploy, publish]/; /^  stage: deploy$/d'
invalid "a job without stage whose default stage (test) is undeclared" gitlab "^[^:]+: digest: stage 'test' is not declared" "$W/gl-nostage.yml"
mutate "$GL" gl-keyword 's/^  artifacts:$/  artefacts:/'
invalid "an unknown job keyword" gitlab "build-image\.artefacts: unknown job keyword \(did you mean 'artifacts'\?\)" "$W/gl-keyword.yml"
mutate "$GL" gl-noscript '/^digest:$/,$s/^  script:$/  scripts:/'
invalid "a job without script" gitlab "^[^:]+: digest: a job needs script" "$W/gl-noscript.yml"
mutate "$GL" gl-needs 's/^  needs: \[build-image\]$/  needs: [build-imgae]/'
invalid "needs naming a missing job" gitlab "digest\.needs\[0\]: 'build-imgae' is not a job of this file \(did you mean 'build-image'\?\)" "$W/gl-needs.yml"
mutate "$GL" gl-needs-str 's/^  needs: \[build-image\]$/  needs: build-image/'
invalid "needs as a string" gitlab "digest\.needs: must be a list" "$W/gl-needs-str.yml"
mutate "$GL" gl-later '$a late:\n  stage: deploy\n  script: [x]\nearly:\n  stage: build\n  needs: [late]\n  script: [y]'
invalid "needs naming a job of a later stage" gitlab "early\.needs\[0\]: 'late' is in a later stage" "$W/gl-later.yml"
mutate "$GL" gl-deps 's/^  needs: \[build-image\]$/  dependencies: [nope]/'
invalid "dependencies naming a missing job" gitlab "digest\.dependencies\[0\]: 'nope' is not a job" "$W/gl-deps.yml"
mutate "$GL" gl-paths 's/^      dotenv: build.env$/      dotenv: build.env\n    paths: digest.txt/'
invalid "artifacts paths not a list" gitlab "build-image\.artifacts\.paths: must be a list of paths" "$W/gl-paths.yml"
mutate "$GL" gl-global 's/^variables:$/variable:/'
invalid "a misspelt global keyword" gitlab "^[^:]+: variable: 'variable' is neither a global keyword \(did you mean 'variables'\?\) nor a job" "$W/gl-global.yml"
mutate "$GL" gl-extends 's/^  image: debian:12$/  extends: .tmpl/'
invalid "extends naming nothing in the file" gitlab "\.extends: '\.tmpl' is no job or template of this file" "$W/gl-extends.yml"
printf 'stages: [build]\n.a:\n  extends: .b\n.b:\n  extends: .a\njob:\n  extends: .a\n  script: [x]\n  stage: build\n' >"$W/gl-cycle.yml"
invalid "extends that form a cycle" gitlab "extends forms a cycle" "$W/gl-cycle.yml"
mutate "$GL" gl-when 's/^  stage: deploy$/  stage: deploy\n  when: manualy/'
invalid "an unknown when" gitlab "digest\.when: 'manualy' is not one of" "$W/gl-when.yml"
mutate "$GL" gl-rules 's/^  stage: deploy$/  stage: deploy\n  only: [main]\n  rules:\n    - iff: $X/'
invalid "rules with an unknown key, and rules with only" gitlab "digest\.rules\[0\]\.iff: not a keyword of rules \(did you mean 'if'\?\)" "$W/gl-rules.yml"
invalid "only together with rules" gitlab "digest\.only: cannot be used together with rules" "$W/gl-rules.yml"
mutate "$GL" gl-stages 's/^stages: \[build, deploy\]$/stages: build/'
invalid "stages not a list" gitlab "^[^:]+: stages: must be a list" "$W/gl-stages.yml"
mutate "$GL" gl-dup 's/^  stage: deploy$/  stage: deploy\n  stage: build/'
invalid "a duplicate key" gitlab "not valid YAML: duplicate key 'stage'" "$W/gl-dup.yml"
printf 'stages: [build]\nextended:\n  extends: .t\n.t:\n  stage: build\n' >"$W/gl-ext-noscript.yml"
invalid "a job whose templates give it no script either" gitlab "^[^:]+: extended: a job needs script" "$W/gl-ext-noscript.yml"

# --- usage --------------------------------------------------------------------------------
rc=0
"$PY" "$VALIDATE" github "$W/missing.yml" >/dev/null 2>&1 || rc=$?
if [[ $rc -eq 2 ]]; then pass "a missing file is a usage error (exit 2)"; else fail "a missing file: exit $rc, wanted 2"; fi
rc=0
"$PY" "$VALIDATE" bitbucket "$GH" >/dev/null 2>&1 || rc=$?
if [[ $rc -eq 2 ]]; then pass "an unknown mode is a usage error (exit 2)"; else fail "an unknown mode: exit $rc, wanted 2"; fi

echo "ci-validate-selftest: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 && $PASSED -gt 0 ]]
