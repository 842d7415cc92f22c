#!/usr/bin/env bash
# Byte-identical outputs of two binaries (issue 36: moves and splits change no output).
#
#   tests/support/same-outputs.sh OLD_BINARY [NEW_BINARY]
#   tests/support/same-outputs.sh --rev REV [NEW_BINARY]   (builds REV's Release binary
#                                                            in build-old/ from a worktree;
#                                                            SAME_OUTPUTS_OLD_DIR moves it)
#   tests/support/same-outputs.sh --prepare REV            (only that build: scripts/test.sh
#                                                            makes it a build stage, so the
#                                                            test finds it built)
#   tests/support/same-outputs.sh --sources-equal REV      (exit 0 when REV's binary would be
#                                                            this tree's: nothing to build)
#
# Each binary, on its own empty cache and output directory, runs the same jobs on the
# integration fixtures (scripts/test.sh makes them):
#   build   the bundled example (scratch base, wheels, data and files layers) and a
#           spec on a Paddle-shaped base (tests/support/make-paddle-base.py: Docker v2s2
#           behind a manifest list), each to an OCI layout and a docker-archive; the
#           example also to an oci-archive; a data layer split into parts (split:);
#           the example with --cache-to a registry repository of its own, whose entries
#           (every tag's manifest and the blobs they name) are written out;
#   push    the example to a local docker-registry, then pull it to a layout, and copy
#           it registry -> docker-archive, layout -> docker-archive, layout ->
#           oci-archive and oci-archive -> layout;
#   render  dockerfile, github-actions and gitlab-ci for the example; k8s-job and
#           paddle-distributed for it (its facts read from its layout: the defaults, every
#           k8s flag, several workers, a checkpoint claim, PaddleJob, --json) and the
#           errors of a few refused flags (their text and exit status);
#   warm    export of the example to the OCI archive containerd imports; plan against
#           nothing, a --have list and images (one sharing a blob above a differing
#           layer); push to a mirror and through a pull-through cache (each run its own,
#           their hosts written MIRROR and CACHE); verify on them and on content
#           directories (one with a blob missing and one corrupt); manifests of each kind;
#   doctor  fixture hosts (tests/fixtures/hosts, prepared once with the fake NVML and
#           libcuda as tests/integration/doctor.sh does): text and JSON reports, with
#           --requires and --strict, the DaemonSet --render writes, and aggregate over
#           the reports (files, JSON lines on stdin, unnamed nodes, a garbage file),
#           with every exit status and error message;
#   sign    the example's layout with one shared key: the signature itself is random
#           (ECDSA), so the payload it signs is compared, and whether cosign_check.py
#           (the independent checker the tests use) accepts each.
# Warm's transfers and checks run one blob at a time (--jobs 1), so what they print
# comes in the same order on every run. Then every file each run wrote is compared by
# SHA-256; the first differences are listed and the exit status is 1. NEW_BINARY
# defaults to build/cli/paddle-image.
set -euo pipefail
SUPPORT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SUPPORT/../.." && pwd)
FIXTURES=${PADDLE_IMAGE_TEST_CACHE:-$HOME/.cache/paddle-image-test}

# sources_equal REV: nothing the binary is built from (all but tests/, bench/, docs/,
# scripts/, examples/, .ci/ and the top-level pages; CMake lists every source, so an
# untracked file is in no build) differs between REV and this working tree, committed
# or not. REV's binary is then this tree's, compiled from the same files with the same
# compiler.
sources_equal() {
  git -C "$ROOT" diff --quiet "$1" -- . ':(exclude)tests' ':(exclude)bench' ':(exclude)docs' \
    ':(exclude)scripts' ':(exclude)examples' ':(exclude).ci' ':(exclude,glob)*.md'
}
# build_pinned REV OLD_SRC: REV's command in a worktree at OLD_SRC, built in its own
# build/ as this tree's is in build/: the same paths relative to the build and the same
# flags (scripts/build.sh's Release), so ccache serves every unity batch whose files REV
# and this tree share (scripts/test.sh's Release stage has just compiled them), and only
# the batches a change touched compile again; a kept worktree compiles nothing again.
build_pinned() {
  local rev=$1 old_src=$2
  if [[ $(git -C "$old_src" rev-parse HEAD 2>/dev/null) != "$(git -C "$ROOT" rev-parse "$rev^{commit}")" ]]; then
    rm -rf "$old_src"
    git -C "$ROOT" worktree prune
    git -C "$ROOT" worktree add --quiet --detach -f "$old_src" "$rev" >/dev/null
  fi
  "$old_src/scripts/build.sh" "$old_src/build" -DPADDLE_IMAGE_UNIT_TESTS=OFF -- paddle-image >/dev/null
}

if [[ ${1:-} == --sources-equal ]]; then # --sources-equal REV: exit 0 when sources_equal REV
  sources_equal "${2:?--sources-equal needs a revision}"
  exit
fi
if [[ ${1:-} == --rev || ${1:-} == --prepare ]]; then
  mode=$1
  rev=${2:?$1 needs a revision}
  shift 2
  old_src=${SAME_OUTPUTS_OLD_DIR:-$ROOT/build-old}/src
  if ! git -C "$ROOT" cat-file -e "$rev^{commit}" 2>/dev/null; then
    echo "same-outputs.sh: revision $rev is not in this clone (a shallow one?); fetch it: git fetch --unshallow" >&2
    exit 2
  fi
  if sources_equal "$rev"; then
    # Nothing to build: the runs below compare two runs of this binary, each on its own
    # cache (the outputs still have to be the same).
    echo "same-outputs.sh: $rev's sources are this tree's: its binary is this one, not built again" >&2
    OLD=${1:-$ROOT/build/cli/paddle-image}
  else
    build_pinned "$rev" "$old_src"
    OLD=$old_src/build/cli/paddle-image
  fi
  [[ $mode == --rev ]] || exit 0
else
  OLD=${1:?usage: same-outputs.sh OLD_BINARY [NEW_BINARY] (or --rev REV [NEW_BINARY])}
  shift
fi
NEW=${1:-$ROOT/build/cli/paddle-image}
OLD=$(realpath "$OLD") NEW=$(realpath "$NEW")
for b in "$OLD" "$NEW"; do
  [[ -x $b ]] || { echo "same-outputs.sh: $b is not an executable" >&2; exit 2; }
done
[[ -d $FIXTURES/base/rootfs && -d $FIXTURES/wheels ]] ||
  { echo "same-outputs.sh: fixtures missing under $FIXTURES (run scripts/test.sh first)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/same-outputs.XXXXXX")
# shellcheck source=registry/registry.sh
source "$SUPPORT/registry/registry.sh"
trap 'registry_stop_all; [[ -n ${SAME_OUTPUTS_KEEP:-} ]] || rm -rf "$WORK"' EXIT # SAME_OUTPUTS_KEEP=1: kept, to look into
registry_start reg open "$WORK/srv" >/dev/null
export PADDLE_IMAGE_CACHE=$WORK/unused-cache DOCKER_CONFIG=$WORK/docker-config COSIGN_PASSWORD=same
unset SOURCE_DATE_EPOCH
mkdir -p "$DOCKER_CONFIG"

# The inputs, once: the example, a Paddle-shaped base, a spec on it, a signing key.
cp -r "$ROOT/examples/ocr-train" "$WORK/ex"
rm -rf "$WORK/ex/out"
TAG=2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6
/usr/bin/python3 "$SUPPORT/make-paddle-base.py" "$WORK/pbase" "$FIXTURES/base/rootfs" "$TAG" >/dev/null
mkdir -p "$WORK/on-base/src/pkg"
printf 'print("hello")\n' >"$WORK/on-base/src/main.py"
printf 'X = 1\n' >"$WORK/on-base/src/pkg/__init__.py"
cat >"$WORK/on-base/spec.yaml" <<EOF
image: {name: example.com/same/on-base, tags: [v1]}
base: oci:$WORK/pbase:$TAG
layers:
  - name: app
    files:
      - {from: src/, to: /home/paddle/work/}
      - {from: src/main.py, to: /tmp/warmup/main.py}
      - {from: src/main.py, to: /usr/local/cuda/lib64/hook.py}
config:
  env: {MODE: prod}
  entrypoint: [python3, /home/paddle/work/main.py]
EOF
"$NEW" key generate -o "$WORK/signer" >/dev/null
HOSTS=$ROOT/tests/fixtures/hosts
DOCTOR_HOSTS=(healthy-8xh100 nvswitch-no-fm stale-cdi geforce-forward-compat-804)
gcc -shared -fPIC -O1 -Wl,-soname,libnvidia-ml.so.1 -o "$WORK/fake-nvml.so" "$SUPPORT/fakegpu/fake_nvml.c"
gcc -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o "$WORK/fake-cuda.so" "$SUPPORT/fakegpu/fake_cuda.c"
for s in "${DOCTOR_HOSTS[@]}"; do
  bash "$SUPPORT/prepare-host.sh" "$HOSTS/$s" "$WORK/hosts/$s" "$WORK/fake-nvml.so" "$WORK/fake-cuda.so" >/dev/null
done
printf '{"checks": []}\nnot json\n' >"$WORK/garbage.jsonl"
# warm plan's other image: the example with another models layer below the same app layer.
cp -r "$WORK/ex" "$WORK/ex-variant"
printf 'another model\n' >"$WORK/ex-variant/models/variant.txt"
(cd "$WORK/ex-variant" && "$NEW" build spec.yaml -q --revision r1 --cache-dir "$WORK/variant-cache" \
  -o "oci:$WORK/variant:v1" >/dev/null)
# A data layer split into parts of 1 MiB: 3 MB of random bytes in three files.
mkdir -p "$WORK/split/big"
/usr/bin/python3 -c 'import random,sys
r = random.Random(49)
for i in range(3):
    open(sys.argv[1] + "/part%d.bin" % i, "wb").write(r.randbytes(1100000))' "$WORK/split/big"
printf 'image: {name: example.com/same/split, tags: [v1]}\nlayers:\n  - name: big\n    split: 1Mi\n    data: [{from: big/, to: /opt/big/}]\n' \
  >"$WORK/split/spec.yaml"

cache_entries() { # REPO OUT: every tag of a registry-cache repository, its manifest and the blobs it names
  local repo=$1 out=$2 tag m
  mkdir -p "$out"
  for tag in $(curl -sf "http://$REG_HOST/v2/$repo/tags/list" | /usr/bin/python3 -c 'import json,sys; [print(t) for t in sorted(json.load(sys.stdin)["tags"] or [])]'); do
    m=$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$REG_HOST/v2/$repo/manifests/$tag")
    printf '%s' "$m" >"$out/$tag.manifest.json"
    printf '%s' "$m" | /usr/bin/python3 -c 'import json,sys
m = json.load(sys.stdin)
for d in [m["config"]] + m.get("layers", []):
    print(d["digest"])' | while read -r d; do
      [[ -e $out/blobs/$d ]] || { mkdir -p "$out/blobs" && curl -sf "http://$REG_HOST/v2/$repo/blobs/$d" -o "$out/blobs/$d"; }
    done
  done
}

layout_digest() { # LAYOUT: its first manifest's digest
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]+"/index.json"))["manifests"][0]["digest"])' "$1"
}

warm_jobs() { # BINARY OUT WHICH: warm plan, push, verify and manifests; outputs and exit statuses in OUT
  local pi=$1 out=$2 which=$3 img=$REG_HOST/same/ex:v1 mir cache digest layer
  mkdir -p "$out"
  registry_start "mir$which" open "$WORK/srv" >/dev/null
  REGISTRY_EXTRA_YAML=$(printf 'proxy:\n  remoteurl: %s\n' "$REG_URL") registry_start "cache$which" open "$WORK/srv" >/dev/null
  mir=$(eval echo "\$MIR${which^^}_HOST") cache=$(eval echo "\$CACHE${which^^}_HOST")
  w() { # NAME ARGS...: paddle-image warm ARGS
    local name=$1
    shift
    "$pi" warm "$@" >"$out/$name" 2>"$out/$name.err" || echo "$name: $?" >>"$out/rc"
  }
  digest=$(layout_digest "$WORK/$which/ex")
  /usr/bin/python3 -c 'import json,sys
d=sys.argv[1]; m=json.load(open(d+"/index.json"))["manifests"][0]["digest"].split(":")[1]
m=json.load(open(d+"/blobs/sha256/"+m)); print(m["layers"][0]["digest"]); print(m["layers"][2]["digest"])' \
    "$WORK/$which/ex" >"$out/have.txt"
  w plan.txt plan "oci:$WORK/$which/ex:v1"
  w plan-variant.txt plan "oci:$WORK/$which/ex:v1" --against "oci:$WORK/variant:v1"
  w plan-variant.json plan "oci:$WORK/$which/ex:v1" --against "oci:$WORK/variant:v1" --json
  w plan-have.txt plan "$img" --have "$out/have.txt" --insecure
  w plan-have.json plan "$img" --have "$out/have.txt" --insecure --json
  w plan-both.txt plan "$img" --have "$out/have.txt" --against "$img"
  w verify-before.json verify --jobs 1 "$img" --registry "http://$mir" --json -q
  w push-mirror.json push --jobs 1 "$img" --to "http://$mir" --tag --insecure --json -q
  w push-mirror.txt push --jobs 1 "$img" --to "http://$mir" --insecure -q
  w push-through.json push --jobs 1 "$img" --through "http://$cache" --insecure --json -q
  w push-own.txt push --jobs 1 "$img" --to "$REG_HOST" -q
  w verify-mirror.json verify --jobs 1 "$img" --registry "http://$mir" --json -q
  w verify-cache.txt verify --jobs 1 "${img%:v1}@$digest" --registry "http://$cache" -q
  w verify-content.txt verify --jobs 1 "$digest" --content-dir "$WORK/$which/ex"
  cp -r "$WORK/$which/ex" "$out/broken"
  layer=$(sed -n 1p "$out/have.txt")
  rm "$out/broken/blobs/sha256/${layer#sha256:}"
  layer=$(sed -n 2p "$out/have.txt")
  chmod u+w "$out/broken/blobs/sha256/${layer#sha256:}"
  printf 'x' >>"$out/broken/blobs/sha256/${layer#sha256:}"
  w verify-broken.txt verify --jobs 1 "${img%:v1}@$digest" --content-dir "$out/broken"
  w verify-broken.json verify --jobs 1 "${img%:v1}@$digest" --content-dir "$out/broken" --json
  w verify-tag.txt verify --jobs 1 "$img" --content-dir "$out/broken"
  w manifests-ds.yaml manifests --kind daemonset "$img" "${img%:v1}@$digest" --pause-image "$img" --insecure \
    --node-selector nvidia.com/gpu.present=true --toleration nvidia.com/gpu:NoSchedule -n gpu-ops
  w manifests-job.json manifests --kind imagepulljob "$img" --insecure --json --command '["python3", "-c", "pass"]' \
    --assume-bandwidth 10MB/s --pull-secret regcred
  w manifests-cache.txt manifests --kind imagecache "$img" --insecure -o "$out/imagecache.yaml"
  w manifests-bad.txt manifests --kind daemonset "$img" --insecure --command '[1]'
  registry_stop "mir$which"
  registry_stop "cache$which"
  sed -i "s|$out|OUT|g; s|$WORK/$which|RUN|g; s|$mir|MIRROR|g; s|$cache|CACHE|g" "$out"/*.*
}

doctor_jobs() { # BINARY OUT: every output and exit status lands in OUT
  local pi=$1 out=$2 s
  mkdir -p "$out"
  on() { # NAME SCENARIO ARGS...: doctor on a prepared host
    local name=$1 host=$2
    shift 2
    PI_FAKE_GPU_SCENARIO="$WORK/hosts/$host/scenario.conf" "$pi" doctor --root "$WORK/hosts/$host/root" \
      --timeout 5 "$@" >"$out/$name" 2>"$out/$name.err" || echo "$name: $?" >>"$out/rc"
  }
  for s in "${DOCTOR_HOSTS[@]}"; do
    on "$s.txt" "$s"
    on "$s.json" "$s" --json --node "node-$s"
  done
  on requires.txt healthy-8xh100 --requires cuda=12.6,sm=90,driver=560.28.03,gpu_memory=40Gi
  on requires.json healthy-8xh100 --requires cuda=11.7,sm=9.0 --json
  on strict.txt geforce-forward-compat-804 --strict
  "$pi" doctor --render daemonset --doctor-image reg.example.com/doctor:1 --namespace gpu-ops \
    --node-selector nvidia.com/gpu.present=true \
    --requires sm=sm_90,paddle=3.0.0,driver_compat=525.60.13,require_cuda=12.4,gpu_memory=46068Mi >"$out/ds.yaml"
  agg() { # NAME ARGS...: doctor aggregate
    local name=$1
    shift
    "$pi" doctor aggregate "$@" >"$out/$name" 2>"$out/$name.err" || echo "$name: $?" >>"$out/rc"
  }
  agg agg-files.out "$out"/*.json
  agg agg-files-json.out --json "$out"/*.json
  cat "$out"/*.json | agg agg-stdin-json.out --json
  cat "$out/healthy-8xh100.json" | agg agg-dash.out "$HOSTS/healthy-8xh100/expected.json" - "$HOSTS/stale-cdi/expected.json"
  agg agg-unnamed-json.out --json "$HOSTS/healthy-8xh100/expected.json" "$HOSTS/h200-vm-580/expected.json"
  agg agg-garbage.out "$out/healthy-8xh100.json" "$WORK/garbage.jsonl"
  sed -i "s|$out|OUT|g" "$out"/*
}

render_k8s() { # BINARY OUT: the Kubernetes kinds for the example, from OUT (the facts' source names it)
  local pi=$1 out=$2 spec=$WORK/ex/spec.yaml digest
  digest=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' \
    "$out/ex/index.json")
  local img=(--image "registry.example.com/ocr/train@$digest" --facts oci:ex:v1)
  local log=$out/render-k8s.txt
  while read -r name args; do
    # shellcheck disable=SC2086 # the arguments are words
    (cd "$out" && "$pi" render $args "$spec" "${img[@]}" -o "render/$name" >>"$log" 2>&1) || echo "$name: exit $?" >>"$log"
  done <<'JOBS'
k8s-job k8s-job
k8s-job-flags k8s-job --gpus 8 --shm-size 64Gi --cpu 48 --memory 400Gi --checkpoint-pvc ocr-ckpt --checkpoint-path /data/ckpt --env NCCL_DEBUG=INFO --env FLAGS_x=1 --toleration pool=gpu:NoExecute --toleration dedicated --node-selector nodepool=a100 --namespace training --name ocr --service-account trainer --backoff-limit 6
k8s-job-a100 k8s-job --gpus 2 --gpu-type A100 --allow-minor-compat --gfd-label memory=x.io/mem
k8s-job-json k8s-job --json
k8s-job-product k8s-job --gpu-product Tesla-X99 --gpu-product NVIDIA-A100-SXM4-80GB
dist paddle-distributed
dist-workers paddle-distributed --workers 4 --gpus-per-worker 8 --name ocr-dist --port 23456
dist-ckpt paddle-distributed --checkpoint-pvc shared-ckpt --no-tolerations --train-arg tools/train.py --train-arg=--epochs=3
paddlejob paddle-distributed --workers 3 --format paddlejob --no-gpu-affinity
dist-json paddle-distributed --json --cpu 500m
err-gpus k8s-job --gpus 0
err-workers paddle-distributed --workers 0
err-format paddle-distributed --format paddlejobs
err-name k8s-job --name Ocr_Train
err-dist-name paddle-distributed --name 9ocr
err-namespace k8s-job --namespace Training
err-shm k8s-job --shm-size 16GB
err-cpu k8s-job --cpu 1.2345
err-pvc k8s-job --checkpoint-pvc Bad_Claim
err-path k8s-job --checkpoint-path relative/dir
err-env k8s-job --env 1X=2
err-toleration k8s-job --toleration nvidia.com/gpu:NoSchedul
err-sa k8s-job --service-account Trainer!
err-backoff k8s-job --backoff-limit 1001
err-port paddle-distributed --port 0
err-gpu-type k8s-job --gpu-type K80
err-conflict k8s-job --no-gpu-affinity --gpu-type A100
JOBS
  (cd "$out" && "$pi" render k8s-job "$spec" --image registry.example.com/ocr/train:v1 --allow-tag --no-gpu-affinity \
    -o render/k8s-job-tag 2>>"$log") || echo "k8s-job-tag: exit $?" >>"$log"
  (cd "$out" && "$pi" render k8s-job "$spec" --image registry.example.com/ocr/train:v1 2>>"$log") ||
    echo "err-tag: exit $?" >>"$log"
  (cd "$out" && "$pi" render github-actions "$spec" --requirements requirements.txt 2>>"$log") ||
    echo "err-requirements: exit $?" >>"$log"
  (cd "$out" && "$pi" render gitlab-ci "$spec" --image registry.example.com/ocr/train:v1 2>>"$log") ||
    echo "err-ci-image: exit $?" >>"$log"
}

run_jobs() { # BINARY OUT
  local pi=$1 out=$2 reg=$REG_HOST/same/ex:v1
  mkdir -p "$out/render"
  (cd "$WORK/ex" && "$pi" build spec.yaml -q --revision r1 --cache-dir "$out/cache" \
    -o "oci:$out/ex:v1" -o "docker-archive:$out/ex.tar" >"$out/build-ex.txt")
  (cd "$WORK/on-base" && "$pi" build spec.yaml -q --revision r1 --cache-dir "$out/cache" \
    -o "oci:$out/on-base:v1" -o "docker-archive:$out/on-base.tar" >"$out/build-on-base.txt")
  (cd "$WORK/ex" && "$pi" build spec.yaml -q --revision r1 --cache-dir "$out/cache" \
    -o "oci-archive:$out/ex.build.oci.tar" >"$out/build-ex-oci-archive.txt")
  (cd "$WORK/split" && "$pi" build spec.yaml -q --revision r1 --cache-dir "$out/cache" \
    -o "oci:$out/split:v1" >"$out/build-split.txt")
  # A fresh cache, so every layer is written to the registry cache by this build.
  (cd "$WORK/ex" && "$pi" build spec.yaml -q --revision r1 --cache-dir "$out/cache-to" --insecure \
    --cache-to "$REG_HOST/same/cache-$(basename "$out")" -o "oci:$out/cached:v1" >"$out/build-cache-to.txt")
  cache_entries "same/cache-$(basename "$out")" "$out/cache-entries"
  sed -i "s|cache-$(basename "$out")|cache-RUN|g" "$out/build-cache-to.txt"
  rm -rf "$out/cache-to"
  "$pi" push "oci:$out/ex:v1" "$reg" --insecure -q >"$out/push.txt"
  "$pi" pull "$reg" -o "oci:$out/pulled:v1" --insecure -q >/dev/null
  "$pi" copy "$reg" "docker-archive:$out/from-registry.tar" --insecure -q >/dev/null
  "$pi" copy "oci:$out/ex:v1" "docker-archive:$out/from-layout.tar" -q >/dev/null
  "$pi" copy "oci:$out/ex:v1" "oci-archive:$out/copied.oci.tar" -q >"$out/copy-oci-archive.txt"
  "$pi" copy "oci-archive:$out/ex.build.oci.tar:v1" "oci:$out/from-oci-archive" -q >"$out/copy-from-oci-archive.txt"
  for t in dockerfile github-actions gitlab-ci; do
    "$pi" render "$t" "$WORK/ex/spec.yaml" -o "$out/render/$t" >/dev/null 2>&1
  done
  "$pi" render github-actions "$WORK/ex/spec.yaml" --image registry.example.com/ocr/other --no-sign \
    -o "$out/render/github-actions-image" >/dev/null 2>&1
  render_k8s "$pi" "$out"
  "$pi" warm export "oci:$out/ex:v1" --name registry.example.com/ocr/train:v1 -o "$out/ex.oci.tar" >/dev/null 2>&1
  cp -r "$out/ex" "$out/signed"
  "$pi" sign "oci:$out/signed:v1" --key "$WORK/signer.key" >/dev/null 2>&1
  doctor_jobs "$pi" "$out/doctor"
  warm_jobs "$pi" "$out/warm" "$(basename "$out")"
  rm -rf "$out/cache"
  sed -i "s|$out|OUT|g" "$out"/*.txt # what was printed names the run's own directory
}

digest_files() { # DIR: "sha256  path" for every file, the signature's own bytes left out
  (cd "$1" && find . -type f ! -name '*.lock' ! -path './signed/*' -print0 | sort -z | xargs -0 sha256sum)
  # The signed layout: the payload blobs (JSON that names the image) and the image's
  # own blobs, by content; the signature manifest carries random bytes, so it is not.
  (cd "$1/signed/blobs/sha256" && for f in *; do
    if grep -q '"critical"' "$f" 2>/dev/null || ! grep -q 'dev.cosignproject.cosign/signature' "$f" 2>/dev/null; then
      echo "$f"
    fi
  done | sed 's/^/signed blob /')
}

echo "old: $OLD" >&2
run_jobs "$OLD" "$WORK/old"
echo "new: $NEW" >&2
run_jobs "$NEW" "$WORK/new"

status=0
for which in old new; do
  if ! /usr/bin/python3 "$SUPPORT/cosign_check.py" verify --key "$WORK/signer.pub" --layout "$WORK/$which/signed" \
    --tag v1 >/dev/null 2>"$WORK/$which.verify"; then
    echo "same-outputs: cosign_check.py refuses the $which binary's signature: $(cat "$WORK/$which.verify")"
    status=1
  fi
done
diff <(digest_files "$WORK/old") <(digest_files "$WORK/new") >"$WORK/diff.txt" || status=1
files=$(digest_files "$WORK/new" | wc -l)
if ((status == 0)); then
  echo "same-outputs: the $files files both binaries wrote are byte-identical"
else
  echo "same-outputs: the outputs differ (first lines; < old, > new):"
  head -20 "$WORK/diff.txt"
  # What differs in the first few text files that both wrote.
  sed -n 's/^> [0-9a-f]*  //p' "$WORK/diff.txt" | head -3 | while read -r f; do
    if [[ -f $WORK/old/$f ]] && grep -Iq . "$WORK/new/$f" 2>/dev/null; then
      echo "--- $f"
      diff "$WORK/old/$f" "$WORK/new/$f" | head -20
    fi
  done
fi
exit $status
