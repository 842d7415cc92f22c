#!/usr/bin/env bash
# Byte-identical outputs of two binaries (issue 36: moves and splits change no output).
#
#   tests/support/same-outputs.sh OLD_BINARY [NEW_BINARY]
#   tests/support/same-outputs.sh --rev REV [NEW_BINARY]   (builds REV's Release binary
#                                                            in build-old/ from a worktree)
#
# Each binary, on its own empty cache and output directory, runs the same jobs on the
# integration fixtures (scripts/test.sh makes them):
#   build   the bundled example (scratch base, wheels, data and files layers) and a
#           spec on a Paddle-shaped base (tests/support/make-paddle-base.py: Docker v2s2
#           behind a manifest list), each to an OCI layout and a docker-archive;
#   push    the example to a local docker-registry, then pull it to a layout, and copy
#           it registry -> docker-archive and layout -> docker-archive;
#   render  dockerfile, github-actions and gitlab-ci for the example; k8s-job and
#           paddle-distributed for it (its facts read from its layout: the defaults, every
#           k8s flag, several workers, a checkpoint claim, PaddleJob, --json) and the
#           errors of a few refused flags (their text and exit status);
#   warm    export of the example to the OCI archive containerd imports;
#   sign    the example's layout with one shared key: the signature itself is random
#           (ECDSA), so the payload it signs is compared, and whether cosign_check.py
#           (the independent checker the tests use) accepts each.
# Then every file each run wrote is compared by SHA-256; the first differences are
# listed and the exit status is 1. NEW_BINARY defaults to build/cli/paddle-image.
set -euo pipefail
SUPPORT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SUPPORT/../.." && pwd)
FIXTURES=${PADDLE_IMAGE_TEST_CACHE:-$HOME/.cache/paddle-image-test}

if [[ ${1:-} == --rev ]]; then
  rev=${2:?--rev needs a revision}
  shift 2
  old_src=$ROOT/build-old/src
  rm -rf "$old_src"
  git -C "$ROOT" worktree prune
  git -C "$ROOT" worktree add --detach -f "$old_src" "$rev" >/dev/null
  "$old_src/scripts/build.sh" "$ROOT/build-old/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  OLD=$ROOT/build-old/build/cli/paddle-image
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
trap 'registry_stop_all; rm -rf "$WORK"' EXIT
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
  "$pi" push "oci:$out/ex:v1" "$reg" --insecure -q >"$out/push.txt"
  "$pi" pull "$reg" -o "oci:$out/pulled:v1" --insecure -q >/dev/null
  "$pi" copy "$reg" "docker-archive:$out/from-registry.tar" --insecure -q >/dev/null
  "$pi" copy "oci:$out/ex:v1" "docker-archive:$out/from-layout.tar" -q >/dev/null
  for t in dockerfile github-actions gitlab-ci; do
    "$pi" render "$t" "$WORK/ex/spec.yaml" -o "$out/render/$t" >/dev/null 2>&1
  done
  "$pi" render github-actions "$WORK/ex/spec.yaml" --image registry.example.com/ocr/other --no-sign \
    -o "$out/render/github-actions-image" >/dev/null 2>&1
  render_k8s "$pi" "$out"
  "$pi" warm export "oci:$out/ex:v1" --name registry.example.com/ocr/train:v1 -o "$out/ex.oci.tar" >/dev/null 2>&1
  cp -r "$out/ex" "$out/signed"
  "$pi" sign "oci:$out/signed:v1" --key "$WORK/signer.key" >/dev/null 2>&1
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
fi
exit $status
