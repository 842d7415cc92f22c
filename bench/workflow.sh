#!/usr/bin/env bash
# The seeds' workflow, two ways side by side: the same image built and pushed
# with a Dockerfile and Debian's buildah (vfs storage), and with a spec.yaml and
# `paddle-image build --push`; cold, then again after a one-line code change.
# Then the fresh CI runner (issue 37): both tools write their registry cache on a
# cold build (buildah on overlay storage, `bud --layers --cache-to`; paddle-image
# `build --cache-to`), then, after a second one-line change, build and push from
# empty local storage with `--cache-from`/`--cache-to` (skipped for a paddle-image
# binary without --cache-from).
#
#   bench/workflow.sh            run it (about 5 min here, + a few s to generate the models once)
#   bench/workflow.sh --prepare  only generate the models directory (untimed)
#
# Environment:
#   BENCH_MODELS_MB      size of the random "models" directory, in MiB  (default 200)
#   BENCH_MODEL_FILES    number of files it is split into                (default 4)
#   BENCH_BASE           debootstrap (default): the test rootfs as one layer; paddle: the
#                        Paddle-shaped base of tests/support/make-paddle-base.py (Docker
#                        media types behind a manifest list, 16 layers, on the same rootfs)
#   PADDLE_IMAGE         binary to test (default build/cli/paddle-image)
#   PADDLE_IMAGE_TEST_CACHE  fixtures (default ~/.cache/paddle-image-test): base/ from
#                        scripts/make-test-base.sh, wheels/ from tests/support/build-wheels.sh
#
# Both tools push to their own docker-registry on 127.0.0.1 (started here,
# stopped on exit), each behind tests/support/registry/fault_proxy.py with no
# rules (pass-through), whose log gives the request body bytes: what each tool
# uploaded, and the GET response body bytes: what it downloaded. The fresh-runner
# buildah (overlay) has a third registry and proxy. buildah gets its own
# --root/--runroot, storage.conf, registries.conf, containers.conf and blob-info
# cache under bench/work/, never the machine's.
# See bench/README.md for what is measured.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

prepare=0
for arg in "$@"; do
  case "$arg" in
    --prepare) prepare=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "workflow.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

models_mb=${BENCH_MODELS_MB:-200}
model_files=${BENCH_MODEL_FILES:-4}
base_kind=${BENCH_BASE:-debootstrap}
[[ $base_kind == debootstrap || $base_kind == paddle ]] ||
  { echo "workflow.sh: BENCH_BASE is debootstrap or paddle, not '$base_kind'" >&2; exit 2; }
pi=${PADDLE_IMAGE:-$root/build/cli/paddle-image}
fixtures=${PADDLE_IMAGE_TEST_CACHE:-$HOME/.cache/paddle-image-test}
py=/usr/bin/python3   # the system Python (stdlib only here); a pyenv python3 may be first on PATH
for v in "$models_mb" "$model_files"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "workflow.sh: BENCH_MODELS_MB and BENCH_MODEL_FILES must be positive integers" >&2; exit 2; }
done

work=$root/bench/work
data=$work/workflow-models-${models_mb}mb-${model_files}f
mkdir -p "$work"

# ---------------------------------------------------------------------------
# 1. Models directory (generated once per parameter set): random, incompressible
# ---------------------------------------------------------------------------
if [[ ! -f $data/.complete ]]; then
  echo "generating $models_mb MB of models in $data ..." >&2
  rm -rf "$data"
  mkdir -p "$data/models"
  per=$((models_mb * 1048576 / model_files))
  for ((i = 0; i < model_files; i++)); do
    head -c "$per" /dev/urandom >"$data/models/weights-$i.pdparams"
  done
  printf '{"arch": "ocr-det", "files": %d}\n' "$model_files" >"$data/models/config.json"
  touch "$data/.complete"
fi
if [[ $prepare == 1 ]]; then
  echo "models ready: $data/models" >&2
  exit 0
fi

for tool in buildah runc git curl sha256sum; do
  command -v "$tool" >/dev/null || { echo "workflow.sh: '$tool' not found (scripts/setup.sh --test installs it)" >&2; exit 1; }
done
for f in /usr/bin/time /usr/bin/docker-registry "$py"; do
  [[ -x $f ]] || { echo "workflow.sh: $f not found" >&2; exit 1; }
done
[[ -x $pi ]] || { echo "workflow.sh: $pi not found or not executable (build first, or set PADDLE_IMAGE)" >&2; exit 1; }
rootfs=$fixtures/base/rootfs
[[ -f $fixtures/base/.done && -d $rootfs ]] ||
  { echo "workflow.sh: no test base in $fixtures/base (scripts/make-test-base.sh $fixtures/base)" >&2; exit 1; }
[[ -f $fixtures/wheels/.done ]] ||
  { echo "workflow.sh: no test wheels in $fixtures/wheels (tests/support/build-wheels.sh $fixtures/wheels)" >&2; exit 1; }
pip_whl=$(find /usr/share/python-wheels -maxdepth 1 -name 'pip-*-py3-none-any.whl' | sort | tail -1)
[[ -n $pip_whl ]] || { echo "workflow.sh: no pip wheel in /usr/share/python-wheels (apt-get install python3-pip-whl)" >&2; exit 1; }
pyver=$(cat "$fixtures/base/python-version")

# ---------------------------------------------------------------------------
# 2. Set-up (untimed): binary snapshot, the Python base, the project, buildah, registries
# ---------------------------------------------------------------------------
run=$work/workflow-run
if [[ -d $run ]]; then chmod -R u+w "$run" 2>/dev/null || true; fi
rm -rf "$run"
mkdir -p "$run"

# shellcheck source=../tests/support/registry/registry.sh
source "$root/tests/support/registry/registry.sh"
cleanup() {
  registry_stop_all
  # the big trees go; logs, timings and metadata stay in $run for a look afterwards
  rm -rf "$run/buildah" "$run/buildah-ovl" "$run/tmp" "$run"/reg/*/storage "$run/base" "$run/pi-cache" \
    "$run/pi-seed-cache" "$run/pi-fresh-cache" "$run/project/models"
  return 0
}
trap cleanup EXIT

# Snapshot the binary so a rebuild of build/ during the run can't change what is measured.
cp "$pi" "$run/paddle-image"
pi_src=$pi
pi_sum=$(sha256sum "$pi" | cut -c1-12)
pi_date=$(date -u -r "$pi" '+%Y-%m-%d %H:%M UTC')
pi=$run/paddle-image

# The Python base both paths build on: the debootstrap rootfs as one layer (or, with
# BENCH_BASE=paddle, the Paddle-shaped base on that rootfs), then
# pip installed into it from Debian's python3-pip-whl wheel by paddle-image's own
# wheel installer (the test base has no pip). Written once per run, untimed.
echo "making the Python base (rootfs + pip $(basename "$pip_whl"))" >&2
mkdir -p "$run/base/pip-wheels"
cp "$pip_whl" "$run/base/pip-wheels/"
cat >"$run/base/rootfs.yaml" <<YAML
base: scratch
layers:
  - name: rootfs
    files:
      - from: $rootfs
        to: /
        allow_absolute_symlinks: true
        allow_outside: true
config:
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
  cmd: [/bin/sh]
YAML
cat >"$run/base/pybase.yaml" <<YAML
base: oci:rootfs-layout:bookworm
layers:
  - name: pip
    wheels: pip-wheels/
YAML
if [[ $base_kind == paddle ]]; then
  "$py" "$root/tests/support/make-paddle-base.py" "$run/base/rootfs-layout" "$rootfs" bookworm >/dev/null
else
  "$pi" build "$run/base/rootfs.yaml" -q -o "oci:$run/base/rootfs-layout:bookworm" \
    --cache-dir "$run/base/cache" >/dev/null
fi
"$pi" build "$run/base/pybase.yaml" -q -o "oci:$run/base/pybase:py$pyver" \
  --cache-dir "$run/base/cache" >/dev/null
rm -rf "$run/base/cache" "$run/base/rootfs-layout"
base_bytes=$(du -sb --apparent-size "$run/base/pybase/blobs" | cut -f1)

# The project: wheels, models, code, a Dockerfile and the equivalent spec, in a git
# repository of its own (as a project would be; paddle-image records the revision).
proj=$run/project
mkdir -p "$proj/wheels" "$proj/src/ocr" "$proj/models"
cp "$fixtures"/wheels/purepkg-*.whl "$fixtures"/wheels/nspkg_*.whl "$fixtures"/wheels/cext-*.whl "$proj/wheels/"
cp -l "$data"/models/* "$proj/models/"   # hard links: same bytes, no second copy on disk
cat >"$proj/src/train.py" <<'PY'
import json, os, sys
import purepkg, nsroot.alpha, nsroot.beta
import cext._fast as fast
from ocr import det

MODELS = "/opt/models"


def main():
    cfg = json.load(open(os.path.join(MODELS, "config.json")))
    print("train", cfg["arch"], purepkg.hello(), fast.add(2, 3), det.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
PY
printf 'def describe():\n    return "det-v1"\n' >"$proj/src/ocr/det.py"
: >"$proj/src/ocr/__init__.py"
for i in $(seq 1 20); do printf 'CONFIG_%d = {"lr": 0.00%d, "epochs": %d}\n' "$i" "$i" "$i" >"$proj/src/ocr/conf_$i.py"; done
cat >"$proj/Dockerfile" <<DOCKERFILE
FROM localhost/bench/pybase:py$pyver
COPY wheels/ /tmp/wheels/
RUN python3 -m pip install --no-index --no-cache-dir --break-system-packages /tmp/wheels/*.whl
COPY models/ /opt/models/
COPY src/ /app/
WORKDIR /app
ENTRYPOINT ["python3", "/app/train.py"]
DOCKERFILE
cat >"$proj/spec.yaml" <<YAML
image: {name: bench/app}
base: oci:$run/base/pybase:py$pyver
layers:
  - name: deps
    wheels: wheels/
  - name: models
    data:
      - {from: models/, to: /opt/models/}
  - name: app
    files:
      - {from: src/, to: /app/}
config:
  entrypoint: [python3, /app/train.py]
  workdir: /app
YAML
printf 'models/\nwheels/\n' >"$proj/.gitignore"   # build inputs, not source (models would be LFS)
git -C "$proj" init -q
git -C "$proj" add -A
git -C "$proj" -c user.name=bench -c user.email=bench@example.invalid commit -q -m "project"
wheels_bytes=$(du -sb --apparent-size "$proj/wheels" | cut -f1)
models_bytes=$(du -sb --apparent-size "$data/models" | cut -f1)
src_files=$(find "$proj/src" -type f | wc -l)

# buildah: vfs, its own root, runroot, storage.conf, registries.conf, containers.conf
# and temporary directory. containers/image keeps a blob-info cache in
# /var/lib/containers/cache for root whatever --root says, so every buildah command
# runs in a private mount namespace where /var/lib is an overlay whose writable
# layer is under $bdir, with an empty /var/lib/containers of its own: the machine's
# /var/lib is neither read for that cache nor written.
bdir=$run/buildah
mkdir -p "$bdir/root" "$bdir/runroot" "$bdir/varlib-up" "$bdir/varlib-work" "$bdir/containers" "$run/tmp"
cat >"$bdir/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$bdir/root"
runroot = "$bdir/runroot"
CONF
printf 'unqualified-search-registries = []\n' >"$bdir/registries.conf"
printf '[engine]\nimage_copy_tmp_dir = "%s"\n' "$run/tmp" >"$bdir/containers.conf"
export CONTAINERS_STORAGE_CONF=$bdir/storage.conf CONTAINERS_REGISTRIES_CONF=$bdir/registries.conf
export CONTAINERS_CONF=$bdir/containers.conf TMPDIR=$run/tmp BUILDAH_FORMAT=oci
unset BUILDAH_LAYERS BUILDAH_ISOLATION
# shellcheck disable=SC2016  # $1 and $@ are expanded by the inner bash
private_varlib='mount -t overlay overlay \
  -o "lowerdir=/var/lib,upperdir=$1/varlib-up,workdir=$1/varlib-work" /var/lib &&
  mkdir -p /var/lib/containers && mount --bind "$1/containers" /var/lib/containers &&
  shift && exec "$@"'
bah=(unshare --mount --propagation private bash -c "$private_varlib" _ "$bdir"
  buildah --root "$bdir/root" --runroot "$bdir/runroot" --storage-driver vfs)
echo "importing the Python base into buildah's vfs storage" >&2
base_id=$("${bah[@]}" pull -q "oci:$run/base/pybase:py$pyver")
"${bah[@]}" tag "$base_id" "localhost/bench/pybase:py$pyver"
driver=$("${bah[@]}" info --format '{{ .store.GraphDriverName }}' 2>/dev/null || echo vfs)
[[ $driver == vfs ]] || { echo "workflow.sh: buildah storage driver is '$driver', expected vfs" >&2; exit 1; }

# The fresh runner's buildah: the overlay driver, in a directory of its own laid out
# as $bdir (its registries.conf, written below, marks its registry insecure). It
# gets the base untimed for its cold build; for the fresh runner its storage and
# blob-info cache are wiped (bah_ovl_wipe) and the base import is timed.
odir=$run/buildah-ovl
bah_ovl_wipe() {
  rm -rf "$odir/root" "$odir/runroot" "$odir/varlib-up" "$odir/varlib-work" "$odir/containers"
  mkdir -p "$odir/root" "$odir/runroot" "$odir/varlib-up" "$odir/varlib-work" "$odir/containers"
}
bah_ovl_wipe
cat >"$odir/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$odir/root"
runroot = "$odir/runroot"
CONF
bao=(env CONTAINERS_STORAGE_CONF="$odir/storage.conf" CONTAINERS_REGISTRIES_CONF="$odir/registries.conf"
  unshare --mount --propagation private bash -c "$private_varlib" _ "$odir"
  buildah --root "$odir/root" --runroot "$odir/runroot" --storage-driver overlay)
echo "importing the Python base into buildah's overlay storage" >&2
printf 'unqualified-search-registries = []\n' >"$odir/registries.conf"
base_id=$("${bao[@]}" pull -q "oci:$run/base/pybase:py$pyver")
"${bao[@]}" tag "$base_id" "localhost/bench/pybase:py$pyver"
ovl_driver=$("${bao[@]}" info --format '{{ .store.GraphDriverName }}' 2>/dev/null || echo unknown)
[[ $ovl_driver == overlay ]] || { echo "workflow.sh: buildah storage driver is '$ovl_driver' in $odir, expected overlay" >&2; exit 1; }

# One registry per tool (and one for buildah on overlay), each behind a pass-through fault proxy.
for t in bah pi bao; do
  registry_start "${t}reg" open "$run/reg" >/dev/null
  host_var=${t^^}REG_HOST
  proxy_start "${t}proxy" "${!host_var}" "$run/reg" >/dev/null
done
# shellcheck disable=SC2153  # exported by registry_start / proxy_start
BAH_REG=$BAHREG_HOST BAH_PUSH=$BAHPROXY_HOST BAH_PLOG=$BAHPROXY_PLOG
# shellcheck disable=SC2153
PI_REG=$PIREG_HOST PI_PUSH=$PIPROXY_HOST PI_PLOG=$PIPROXY_PLOG
# shellcheck disable=SC2153
BAO_REG=$BAOREG_HOST BAO_PUSH=$BAOPROXY_HOST BAO_PLOG=$BAOPROXY_PLOG
cat >"$odir/registries.conf" <<CONF
unqualified-search-registries = []

[[registry]]
location = "$BAO_PUSH"
insecure = true

[[registry]]
location = "$BAO_REG"
insecure = true
CONF

# ---------------------------------------------------------------------------
# 3. Timed runs
# ---------------------------------------------------------------------------
declare -A SECS RSS CPU UP DOWN REQ PROBES NET STALL T0 T1 FAIL
WARN=()

# The first request of a client process to a registry named with --insecure /
# --tls-verify=false is a TLS hello (both tools try HTTPS first). docker-registry
# answers it at once (in plain HTTP) and the client falls back to plain HTTP, but
# fault_proxy.py waits for a header line that never comes, until the client gives
# up: paddle-image after 3 s (its probe's connect timeout), buildah after Go's
# 10 s TLS handshake timeout. The proxy logs each as "closed: truncated header
# block". That wait is the proxy's, not the tool's: it is measured here (the same
# failing request straight to the registry and through the proxy) and reported
# beside the times, which are also given net of it.
wall_of() { # CMD...: wall seconds of CMD, whatever its exit status
  local t0; t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.3f", b - a}'
}
probes_in() { grep -c 'closed: truncated header block' "$1" || true; }
calibrate() { # TOOL PROXY_LOG DIRECT_CMD... -- PROXIED_CMD...
  local tool=$1 plog=$2; shift 2
  local direct=() proxied=() lines0 d p n
  while [[ $1 != -- ]]; do direct+=("$1"); shift; done
  shift; proxied=("$@")
  d=$(wall_of "${direct[@]}")
  lines0=$(wc -l <"$plog")
  p=$(wall_of "${proxied[@]}")
  sleep 0.2
  n=$(tail -n +"$((lines0 + 1))" "$plog" | grep -c 'closed: truncated header block' || true)
  STALL[$tool]=$(awk -v d="$d" -v p="$p" -v n="$n" 'BEGIN{ if (n < 1) print "0.00"; else printf "%.2f", (p - d) / n }')
  echo "  $tool: missing manifest, straight to the registry $d s, through the proxy $p s ($n HTTPS probe(s)): ${STALL[$tool]} s per probe" >&2
}
echo "measuring the proxy's HTTPS-probe wait (untimed)" >&2
calibrate pi "$PI_PLOG" "$pi" inspect "$PI_REG/bench/none:x" --insecure -- \
  "$pi" inspect "$PI_PUSH/bench/none:x" --insecure
calibrate bah "$BAH_PLOG" "${bah[@]}" pull --retry 0 --tls-verify=false "docker://$BAH_REG/bench/none:x" -- \
  "${bah[@]}" pull --retry 0 --tls-verify=false "docker://$BAH_PUSH/bench/none:x"

# timed KEY PROXY_LOG CMD...: run CMD under GNU time -v; record wall seconds, peak
# RSS (largest single process), user+sys CPU, the request body bytes and requests
# the proxy in front of the tool's registry relayed meanwhile, the response body
# bytes of its GETs (downloaded), and the HTTPS probes it stalled (net seconds =
# seconds - probes x the tool's stall). A failing CMD ends the script, unless
# may_fail=1 is set for the call: then its error line goes to FAIL[KEY], the
# figures up to the failure are kept, and timed returns 1.
timed() {
  local key=$1 plog=$2; shift 2
  local base=$run/$key tool=${key%%_*}
  sync   # don't let an earlier run's dirty pages be flushed inside this one
  local lines0 t0 t1 rc=0
  lines0=$(wc -l <"$plog")
  t0=$(date +%s.%N)
  /usr/bin/time -v -o "$base.time" "$@" >"$base.out" 2>"$base.err" || rc=$?
  if ((rc != 0)); then
    echo "workflow.sh: '$key' failed: $*" >&2
    tail -n 30 "$base.out" "$base.err" >&2
    [[ ${may_fail:-0} == 1 ]] || exit 1
    # the last error line (bud's output has a time stamp in front), else the status
    FAIL[$key]=$(cat "$base.err" "$base.out" | sed 's/^[0-9]*\.[0-9]* //' | grep -i 'error' | tail -n 1 | cut -c1-600 || true)
    [[ -n ${FAIL[$key]} ]] || FAIL[$key]="exit status $rc"
  fi
  t1=$(date +%s.%N)
  T0[$key]=$t0 T1[$key]=$t1
  sleep 0.2   # the proxy writes its log line after relaying the answer
  SECS[$key]=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b - a}')
  RSS[$key]=$(awk -F': ' '/Maximum resident set size/{print $2}' "$base.time")
  CPU[$key]=$(awk -F': ' '/User time|System time/{s += $2} END{printf "%.2f", s}' "$base.time")
  tail -n +"$((lines0 + 1))" "$plog" >"$base.proxy.log"
  read -r "UP[$key]" "REQ[$key]" "DOWN[$key]" < <(awk '/ conn=[0-9]+ [A-Z]+ / {
      n++; if (match($0, / in=[0-9]+/)) s += substr($0, RSTART + 4, RLENGTH - 4)
      if ($0 ~ / conn=[0-9]+ GET / && match($0, / out=[0-9]+/)) d += substr($0, RSTART + 5, RLENGTH - 5) }
    END { print s + 0, n + 0, d + 0 }' "$base.proxy.log")
  PROBES[$key]=$(probes_in "$base.proxy.log")
  NET[$key]=$(awk -v s="${SECS[$key]}" -v n="${PROBES[$key]}" -v w="${STALL[$tool]}" 'BEGIN{printf "%.2f", s - n * w}')
  printf '  %-18s %8.2f s (net %.2f) %8.1f MB RSS  cpu %6.2f s  uploaded %10.3f MB, downloaded %10.3f MB in %d requests\n' \
    "$key" "${SECS[$key]}" "${NET[$key]}" "$(awk -v k="${RSS[$key]}" 'BEGIN{print k/1024}')" "${CPU[$key]}" \
    "$(awk -v b="${UP[$key]}" 'BEGIN{print b/1048576}')" "$(awk -v b="${DOWN[$key]}" 'BEGIN{print b/1048576}')" "${REQ[$key]}" >&2
  return $((rc != 0))
}

# sum_runs TOTAL PART...: TOTAL's figures are its parts' (peak RSS: the largest); a
# failed part fails TOTAL with its error line.
sum_runs() {
  local total=$1 p; shift
  SECS[$total]=0 NET[$total]=0 CPU[$total]=0 UP[$total]=0 DOWN[$total]=0 REQ[$total]=0 PROBES[$total]=0 RSS[$total]=0
  for p in "$@"; do
    SECS[$total]=$(awk -v a="${SECS[$total]}" -v b="${SECS[$p]}" 'BEGIN{printf "%.2f", a + b}')
    NET[$total]=$(awk -v a="${NET[$total]}" -v b="${NET[$p]}" 'BEGIN{printf "%.2f", a + b}')
    CPU[$total]=$(awk -v a="${CPU[$total]}" -v b="${CPU[$p]}" 'BEGIN{printf "%.2f", a + b}')
    UP[$total]=$((UP[$total] + UP[$p]))
    DOWN[$total]=$((DOWN[$total] + DOWN[$p]))
    REQ[$total]=$((REQ[$total] + REQ[$p]))
    PROBES[$total]=$((PROBES[$total] + PROBES[$p]))
    RSS[$total]=$((RSS[$total] > RSS[$p] ? RSS[$total] : RSS[$p]))
    if [[ -n ${FAIL[$p]:-} && -z ${FAIL[$total]:-} ]]; then FAIL[$total]=${FAIL[$p]}; fi
  done
}

# manifest_of HOST REPO TAG -> "layers total_layer_bytes" of the pushed manifest (checks it is there)
manifest_of() {
  curl --noproxy '*' -sS -f -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$1/v2/$2/manifests/$3" | "$py" -c '
import json, sys
m = json.load(sys.stdin)
print(len(m["layers"]), sum(l["size"] for l in m["layers"]))'
}
vfs_bytes() { du -sb "$bdir/root" | cut -f1; }

machine_cache=/var/lib/containers/cache/blob-info-cache-v1.boltdb
machine_cache_stamp() { stat -c '%Y.%y' "$machine_cache" 2>/dev/null || echo none; }
machine_cache_before=$(machine_cache_stamp)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
own_ticks() { awk '{print $14+$15+$16+$17}' /proc/$$/stat; }
busy_start=$(busy_ticks); own_start=$(own_ticks); wall_start=$(date +%s.%N)
hz=$(getconf CLK_TCK)

echo "warm-up read of the inputs" >&2
cat "$proj"/models/* "$proj"/wheels/* "$run"/base/pybase/blobs/sha256/* >/dev/null

declare -A VFS MAN
for phase in cold rebuild; do
  echo "[$phase]" >&2
  if [[ $phase == rebuild ]]; then
    # the one-line change
    printf 'print("rebuilt")\n' >>"$proj/src/ocr/det.py"
  fi
  # bud's output is time-stamped line by line ($EPOCHREALTIME, no fork) for the step times
  # shellcheck disable=SC2016  # expanded by the inner bash
  timed "bah_${phase}_bud" "$BAH_PLOG" bash -c 'set -o pipefail; "$@" 2>&1 |
    while IFS= read -r l; do printf "%s %s\n" "$EPOCHREALTIME" "$l"; done' _ \
    "${bah[@]}" bud --layers --pull=never --network none -t localhost/bench/app:latest -f "$proj/Dockerfile" "$proj"
  timed "bah_${phase}_push" "$BAH_PLOG" "${bah[@]}" push --tls-verify=false \
    localhost/bench/app:latest "docker://$BAH_PUSH/bench/app:$phase"
  VFS[$phase]=$(vfs_bytes)
  timed "pi_$phase" "$PI_PLOG" "$pi" build "$proj/spec.yaml" --push "$PI_PUSH/bench/app:$phase" --insecure \
    --cache-dir "$run/pi-cache" -q --metadata-file "$run/pi_$phase.json"
  MAN[bah_$phase]=$(manifest_of "$BAH_REG" bench/app "$phase") || WARN+=("buildah $phase: no manifest in the registry")
  MAN[pi_$phase]=$(manifest_of "$PI_REG" bench/app "$phase") || WARN+=("paddle-image $phase: no manifest in the registry")
  sum_runs "bah_$phase" "bah_${phase}_bud" "bah_${phase}_push"
done

# The fresh CI runner (issue 37). Seed: each tool's cold build of the code as it is
# now writes its registry cache (buildah on overlay into empty storage but the base,
# `bud --layers --cache-to`, then push; paddle-image from an empty --cache-dir with
# --cache-to, pushed to a repository of its own so that its upload is a cold one).
# Then a second one-line change and the fresh runner: buildah's storage and blob-info
# cache wiped (the base imported again, timed), `bud --layers --cache-from/--cache-to`
# and push; paddle-image from another empty --cache-dir with --cache-from/--cache-to,
# pushed beside the cold and rebuild images. A buildah cache failure is recorded
# (FAIL) instead of ending the run.
BAO_CACHE=$BAO_PUSH/bench/app-bcache PI_CACHE=$PI_PUSH/bench/app/cache
pi_cache=0
if "$pi" build --help 2>&1 | grep -q -- '--cache-from'; then pi_cache=1; fi
echo "[fresh runner: the registry caches are written]" >&2
# shellcheck disable=SC2016  # expanded by the inner bash
if may_fail=1 timed bah_ovl_cold_bud "$BAO_PLOG" bash -c 'set -o pipefail; "$@" 2>&1 |
    while IFS= read -r l; do printf "%s %s\n" "$EPOCHREALTIME" "$l"; done' _ \
    "${bao[@]}" bud --layers --pull=never --network none --cache-to "$BAO_CACHE" \
    -t localhost/bench/app:latest -f "$proj/Dockerfile" "$proj"; then
  may_fail=1 timed bah_ovl_cold_push "$BAO_PLOG" "${bao[@]}" push --tls-verify=false \
    localhost/bench/app:latest "docker://$BAO_PUSH/bench/app:cold" || true
  sum_runs bah_ovl_cold bah_ovl_cold_bud bah_ovl_cold_push
else
  sum_runs bah_ovl_cold bah_ovl_cold_bud
fi
if [[ $pi_cache == 1 ]]; then
  timed pi_seed "$PI_PLOG" "$pi" build "$proj/spec.yaml" --push "$PI_PUSH/bench/app-seed:cold" --insecure \
    --cache-dir "$run/pi-seed-cache" -q --metadata-file "$run/pi_seed.json" --cache-to "$PI_CACHE"
else
  echo "  paddle-image: skipped, '$pi build --help' has no --cache-from (a binary from before issue 37)" >&2
fi
echo "[fresh runner: a second one-line change, empty local storage]" >&2
printf 'print("fresh runner")\n' >>"$proj/src/ocr/det.py"
bah_ovl_wipe
# shellcheck disable=SC2016  # expanded by the inner bash
timed bah_fresh_pull "$BAO_PLOG" bash -c 'ref=$1 name=$2; shift 2; id=$("$@" pull -q "$ref") && "$@" tag "$id" "$name"' _ \
  "oci:$run/base/pybase:py$pyver" "localhost/bench/pybase:py$pyver" "${bao[@]}"
# shellcheck disable=SC2016  # expanded by the inner bash
if may_fail=1 timed bah_fresh_bud "$BAO_PLOG" bash -c 'set -o pipefail; "$@" 2>&1 |
    while IFS= read -r l; do printf "%s %s\n" "$EPOCHREALTIME" "$l"; done' _ \
    "${bao[@]}" bud --layers --pull=never --network none --cache-from "$BAO_CACHE" --cache-to "$BAO_CACHE" \
    -t localhost/bench/app:latest -f "$proj/Dockerfile" "$proj"; then
  may_fail=1 timed bah_fresh_push "$BAO_PLOG" "${bao[@]}" push --tls-verify=false \
    localhost/bench/app:latest "docker://$BAO_PUSH/bench/app:fresh" || true
  sum_runs bah_fresh bah_fresh_pull bah_fresh_bud bah_fresh_push
else
  sum_runs bah_fresh bah_fresh_pull bah_fresh_bud
fi
ovl_bytes=$(du -sb "$odir/root" | cut -f1)
if [[ $pi_cache == 1 ]]; then
  timed pi_fresh "$PI_PLOG" "$pi" build "$proj/spec.yaml" --push "$PI_PUSH/bench/app:fresh" --insecure \
    --cache-dir "$run/pi-fresh-cache" -q --metadata-file "$run/pi_fresh.json" \
    --cache-from "$PI_CACHE" --cache-to "$PI_CACHE"
  MAN[pi_fresh]=$(manifest_of "$PI_REG" bench/app fresh) || WARN+=("paddle-image fresh runner: no manifest in the registry")
fi
if [[ -z ${FAIL[bah_fresh]:-} ]]; then
  MAN[bah_fresh]=$(manifest_of "$BAO_REG" bench/app fresh) || WARN+=("buildah fresh runner: no manifest in the registry")
fi
registry_stop_all   # before reading CPU counters: stopped children count in our own ticks

busy_end=$(busy_ticks); own_end=$(own_ticks); wall_end=$(date +%s.%N)
other_cpu=$(awk -v b=$((busy_end - busy_start)) -v o=$((own_end - own_start)) -v hz="$hz" \
  'BEGIN{x = (b - o) / hz; if (x < 0) x = 0; printf "%.1f", x}')
wall=$(awk -v a="$wall_start" -v b="$wall_end" 'BEGIN{printf "%.0f", b - a}')

# Checks (untimed): the rebuild reused every layer but the code; buildah took the cache;
# the machine's /var/lib/containers was not created by this run.
layer_status() { # METADATA -> "name=status ..." of the spec's layers; "(registry)": from the registry cache
  "$py" -c 'import json,sys; print(" ".join(l["name"] + "=" + l["status"] + ("(registry)" if "cache" in l else "")
    for l in json.load(open(sys.argv[1]))["layers"] if l["kind"] != "base"))' "$1"
}
layer_secs() { # METADATA -> "name=seconds ..." of the spec's layers, and the build's own seconds
  "$py" -c 'import json,sys
m = json.load(open(sys.argv[1]))
print(" ".join("%s %.3f" % (l["name"], l["seconds"]) for l in m["layers"] if l["kind"] != "base") + ", whole build %.2f" % m["seconds"])' "$1"
}
pi_uploaded() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["registry"]["bytes_uploaded"])' "$1"; }
pi_downloaded() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["registry"]["bytes_downloaded"])' "$1"; }
pi_rcache() { # METADATA -> the build report's registry cache counters
  "$py" -c 'import json,sys
c = json.load(open(sys.argv[1])).get("registry_cache", {})
print("hits %d, misses %d, stored %d, already there %d, warnings %d" % tuple(
    len(c.get(k) or []) if isinstance(c.get(k), list) else int(c.get(k) or 0)
    for k in ("hits", "misses", "stored", "present", "warnings")))' "$1"
}
st=$(layer_status "$run/pi_rebuild.json")
[[ $st == "deps=reused models=reused app=rebuilt" ]] || WARN+=("paddle-image rebuild: layer statuses '$st', expected deps and models reused, app rebuilt")
bah_cached=$(grep -c 'Using cache' "$run/bah_rebuild_bud.out" || true)
[[ $bah_cached -ge 3 ]] || WARN+=("buildah rebuild used its layer cache for $bah_cached steps, expected 3 (COPY wheels, RUN pip, COPY models)")
if [[ $pi_cache == 1 ]]; then
  st=$(layer_status "$run/pi_fresh.json")
  [[ $st == "deps=reused(registry) models=reused(registry) app=rebuilt" ]] ||
    WARN+=("paddle-image fresh runner: layer statuses '$st', expected deps and models from the registry cache, app rebuilt")
fi
bah_fresh_cached=$(grep -c 'Using cache' "$run/bah_fresh_bud.out" || true)
if [[ -z ${FAIL[bah_fresh_bud]:-} && $bah_fresh_cached -lt 3 ]]; then
  WARN+=("buildah fresh runner used its registry cache for $bah_fresh_cached steps, expected 3 (COPY wheels, RUN pip, COPY models)")
fi
if [[ $(machine_cache_stamp) != "$machine_cache_before" ]]; then
  WARN+=("$machine_cache changed during the run (another process's skopeo/podman/buildah, or the mount namespace here did not hold)")
fi
# bud_steps KEY: seconds from one "STEP k/n" line of bud to the next (the step and its
# commit; the last one includes the final commit), and start-up before STEP 1.
bud_steps() {
  awk -v t0="${T0[$1]}" -v t1="${T1[$1]}" '
    { t = $1; sub(/^[^ ]+ /, "") }
    /^STEP [0-9]+\/[0-9]+: / {
      if (n) d[n] = t - s[n]; else pre = t - t0
      n++; s[n] = t; split($0, w, " "); lab[n] = w[3]; if (w[3] == "COPY") lab[n] = lab[n] " " w[4]
    }
    /^--> Using cache/ { c[n] = 1 }
    /^--> Cache pulled from remote/ { r[n] = 1 }
    END {
      d[n] = t1 - s[n]; printf "start %.1f", pre
      for (i = 1; i <= n; i++) printf ", %s%s %.1f", lab[i], r[i] ? " (registry cache)" : c[i] ? " (cache)" : "", d[i]
      print ""
    }' "$run/$1.out"
}

# ---------------------------------------------------------------------------
# 4. Report
# ---------------------------------------------------------------------------
mb() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1048576}'; }
kb() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1024}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b <= 0) b = 0.005; printf "%.1f", a/b }'; }
rssmb() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }

names=(bah_cold_bud bah_cold_push bah_cold pi_cold bah_rebuild_bud bah_rebuild_push bah_rebuild pi_rebuild)
declare -A LABEL=(
  [bah_cold_bud]="  buildah bud --layers"
  [bah_cold_push]="  buildah push"
  [bah_cold]="buildah cold, total"
  [pi_cold]="paddle-image cold build --push"
  [bah_rebuild_bud]="  buildah bud --layers"
  [bah_rebuild_push]="  buildah push"
  [bah_rebuild]="buildah rebuild, total"
  [pi_rebuild]="paddle-image rebuild --push"
  [bah_ovl_cold_bud]="  buildah bud --cache-to"
  [bah_ovl_cold_push]="  buildah push"
  [bah_ovl_cold]="buildah overlay cold, total"
  [pi_seed]="paddle-image cold, --cache-to"
  [bah_fresh_pull]="  buildah pull (the base)"
  [bah_fresh_bud]="  bud --cache-from/--cache-to"
  [bah_fresh_push]="  buildah push"
  [bah_fresh]="buildah fresh runner, total"
  [pi_fresh]="paddle-image fresh runner"
)
fresh_names=(bah_ovl_cold_bud bah_ovl_cold_push bah_ovl_cold pi_seed bah_fresh_pull bah_fresh_bud bah_fresh_push bah_fresh pi_fresh)
row() { # KEY: one line of the table: figures, or why there are none
  local n=$1
  if [[ -n ${FAIL[$n]:-} ]]; then
    printf '%-32s %8s  (%s s until it failed: see "failed" below)\n' "${LABEL[$n]}" failed "${SECS[$n]:-?}"
  elif [[ -z ${SECS[$n]:-} ]]; then
    printf '%-32s %8s\n' "${LABEL[$n]}" "$([[ $n == pi_* ]] && echo skipped || echo "not run")"
  else
    printf '%-32s %8.2f %7d %8.2f %7.1f %7.2f %12.3f %13.3f %5d\n' "${LABEL[$n]}" "${SECS[$n]}" "${PROBES[$n]}" "${NET[$n]}" \
      "$(rssmb "${RSS[$n]}")" "${CPU[$n]}" "$(awk -v b="${UP[$n]}" 'BEGIN{printf "%.3f", b/1048576}')" \
      "$(awk -v b="${DOWN[$n]}" 'BEGIN{printf "%.3f", b/1048576}')" "${REQ[$n]}"
  fi
}
# fresh_ratio TEXT NUM_KEY DEN_KEY: NUM/DEN as measured and net, or why not
fresh_ratio() {
  local k
  for k in "$2" "$3"; do
    if [[ -n ${FAIL[$k]:-} || -z ${SECS[$k]:-} ]]; then
      printf '  %s     n/a   (%s %s)\n' "$1" "${LABEL[$k]}" "$([[ -n ${FAIL[$k]:-} ]] && echo failed || echo "did not run")"
      return
    fi
  done
  printf '  %s  %6sx   net of the proxy wait: %6sx\n' "$1" "$(ratio "${SECS[$2]}" "${SECS[$3]}")" "$(ratio "${NET[$2]}" "${NET[$3]}")"
}
# goal_line TEXT NUM_KEY DEN_KEY CMP LIMIT: [MET]/[MISSED] on the net ratio NUM/DEN
# (CMP le: at most LIMIT, ge: at least LIMIT), or why it cannot be judged.
goal_line() {
  local text=$1 a=$2 b=$3 cmp=$4 lim=$5 k ok
  for k in "$a" "$b"; do
    if [[ -n ${FAIL[$k]:-} ]]; then printf '  [FAILED] %s: %s failed (below)\n' "$text" "${LABEL[$k]}"; return; fi
    if [[ -z ${SECS[$k]:-} ]]; then printf '  [SKIPPED] %s: %s did not run\n' "$text" "${LABEL[$k]}"; return; fi
  done
  ok=$(awk -v a="${NET[$a]}" -v b="${NET[$b]}" -v l="$lim" -v c="$cmp" \
    'BEGIN{ if (b <= 0) b = 0.005; r = a / b; print (c == "le" ? r <= l : r >= l) ? 1 : 0 }')
  printf '  [%s] %s, net of the proxy wait (%sx; %sx with it)\n' "$( [[ $ok == 1 ]] && echo MET || echo MISSED )" \
    "$text" "$(ratio "${NET[$a]}" "${NET[$b]}")" "$(ratio "${SECS[$a]}" "${SECS[$b]}")"
}

report() {
  echo
  echo "paddle-image workflow benchmark: Dockerfile + buildah vs spec.yaml + paddle-image, build and push"
  echo "  host:    $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/{print $2}') GB RAM, $(df --output=fstype "$run" | tail -1) at $run"
  echo "  load:    $load_start at start (1/5/15-min load average); nice $(nice)"
  echo "  other:   ${other_cpu} CPU-seconds used by other processes during the ${wall} s of timed work (a few seconds is kernel writeback and noise)"
  echo "  paddle-image: $pi_src (version $("$pi" --version 2>/dev/null | head -1), built $pi_date, sha256 $pi_sum...)"
  echo "  buildah: $(buildah --version | awk '{print $3}'), storage driver $driver (vfs copies the whole root file system for every layer),"
  echo "           isolation oci (runc $(runc --version | awk 'NR==1{print $3}')), bud --layers --network none, push gzip (its default)"
  echo "           fresh runner: storage driver $ovl_driver (native), its registry insecure in a private registries.conf,"
  echo "           bud --cache-to (cold) and --cache-from/--cache-to (fresh) $BAO_REG/bench/app-bcache"
  echo "  registry: $(/usr/bin/docker-registry --version | awk '{print $2, $3}') on 127.0.0.1, one per tool (two for buildah: vfs, overlay), each behind fault_proxy.py in pass-through mode"
  echo "  proxy wait: the proxy never answers a TLS hello; each client's first HTTPS probe waits until it gives up:"
  echo "           paddle-image ${STALL[pi]} s, buildah ${STALL[bah]} s per probe (measured; docker-registry itself answers at once)"
  if [[ $base_kind == paddle ]]; then base_desc="Paddle-shaped (make-paddle-base.py: Docker media types, manifest list, 16 layers) on the debootstrap rootfs"
  else base_desc="debootstrap bookworm rootfs"; fi
  echo "  image:   base = $base_desc + pip ($(basename "$pip_whl"), installed by paddle-image), python $pyver, $(mb "$base_bytes") MB of blobs"
  echo "           + $(find "$proj/wheels" -name '*.whl' | wc -l) wheels ($(kb "$wheels_bytes") KB) installed (pip --no-index / paddle-image wheels layer)"
  echo "           + models: $model_files files, $(mb "$models_bytes") MB random  + code: $src_files files; rebuild = one line appended to src/ocr/det.py"
  echo "           fresh runner = a second line appended, built from empty local storage; paddle-image's cache $PI_REG/bench/app/cache"
  echo
  printf '%-32s %8s %7s %8s %7s %7s %12s %13s %5s\n' run seconds probes "net s" "RSS MB" "CPU s" "uploaded MB" "downloaded MB" reqs
  local n
  for n in "${names[@]}"; do
    if [[ $n == bah_rebuild_bud ]]; then echo; fi
    row "$n"
  done
  echo
  echo "fresh runner (issue 37): buildah on overlay, paddle-image; seed the registry caches, then a second change built"
  echo "from empty local storage"
  for n in "${fresh_names[@]}"; do
    if [[ $n == bah_fresh_pull ]]; then echo; fi
    row "$n"
  done
  echo "  (seconds: wall; probes: HTTPS probes the proxy stalled; net s: seconds minus their wait; RSS: peak of the"
  echo "   largest single process (GNU time -v); CPU: user+sys of the tool and its children; uploaded: request body"
  echo "   bytes the proxy relayed to the registry; downloaded: response body bytes of GETs; reqs: HTTP requests)"
  echo
  echo "ratios (buildah seconds / paddle-image seconds; > 1 = paddle-image faster):"
  printf '  cold build + push:    %6sx   net of the proxy wait: %6sx\n' "$(ratio "${SECS[bah_cold]}" "${SECS[pi_cold]}")" \
    "$(ratio "${NET[bah_cold]}" "${NET[pi_cold]}")"
  printf '  rebuild + push:       %6sx   net of the proxy wait: %6sx\n' "$(ratio "${SECS[bah_rebuild]}" "${SECS[pi_rebuild]}")" \
    "$(ratio "${NET[bah_rebuild]}" "${NET[pi_rebuild]}")"
  echo "uploaded (request bodies through the proxy):"
  printf '  cold:    buildah %s MB, paddle-image %s MB (paddle-image counts %s MB of blobs)\n' \
    "$(mb "${UP[bah_cold]}")" "$(mb "${UP[pi_cold]}")" "$(mb "$(pi_uploaded "$run/pi_cold.json")")"
  printf '  rebuild: buildah %s KB, paddle-image %s KB (paddle-image counts %s KB of blobs)\n' \
    "$(kb "${UP[bah_rebuild]}")" "$(kb "${UP[pi_rebuild]}")" "$(kb "$(pi_uploaded "$run/pi_rebuild.json")")"
  echo "fresh runner, seconds / seconds (> 1 = the second faster):"
  fresh_ratio "paddle-image fresh runner / paddle-image warm rebuild:" pi_fresh pi_rebuild
  fresh_ratio "buildah fresh runner / paddle-image fresh runner:      " bah_fresh pi_fresh
  echo "fresh runner, bytes through the proxy (downloaded: GET response bodies; uploaded: request bodies):"
  if [[ -n ${FAIL[bah_fresh]:-} ]]; then
    echo "  buildah:      failed (below)"
  else
    printf '  buildah:      downloaded %s MB, uploaded %s KB (the base import from the layout not included: no registry)\n' \
      "$(mb "${DOWN[bah_fresh]}")" "$(kb "${UP[bah_fresh]}")"
  fi
  if [[ $pi_cache == 1 ]]; then
    printf '  paddle-image: downloaded %s MB, uploaded %s KB (it counts %s MB of blobs downloaded, %s KB uploaded)\n' \
      "$(mb "${DOWN[pi_fresh]}")" "$(kb "${UP[pi_fresh]}")" "$(mb "$(pi_downloaded "$run/pi_fresh.json")")" \
      "$(kb "$(pi_uploaded "$run/pi_fresh.json")")"
  fi
  printf 'peak RSS: buildah %s MB, paddle-image %s MB\n' \
    "$(rssmb "$(printf '%s\n' "${RSS[bah_cold]}" "${RSS[bah_rebuild]}" | sort -n | tail -1)")" \
    "$(rssmb "$(printf '%s\n' "${RSS[pi_cold]}" "${RSS[pi_rebuild]}" | sort -n | tail -1)")"
  echo
  echo "where the time goes:"
  local p nl sz
  for p in cold rebuild; do
    echo "  buildah bud $p, seconds per step (step + its commit): $(bud_steps "bah_${p}_bud")"
    read -r nl sz <<<"${MAN[bah_$p]:-0 0}"
    echo "    pushed $nl layers, $(mb "$sz") MB; vfs storage now $(mb "${VFS[$p]}") MB"
    read -r nl sz <<<"${MAN[pi_$p]:-0 0}"
    echo "  paddle-image $p, seconds per layer: $(layer_secs "$run/pi_$p.json"); pushed $nl layers, $(mb "$sz") MB"
  done
  echo "  paddle-image rebuild layers: $(layer_status "$run/pi_rebuild.json"); buildah rebuild steps from its cache: $bah_cached"
  for p in ovl_cold fresh; do
    [[ -f $run/bah_${p}_bud.out ]] || continue
    echo "  buildah bud $([[ $p == fresh ]] && echo "fresh runner" || echo "overlay cold --cache-to"), seconds per step: $(bud_steps "bah_${p}_bud")"
  done
  if [[ -n ${MAN[bah_fresh]:-} ]]; then
    read -r nl sz <<<"${MAN[bah_fresh]}"
    echo "    fresh runner: pushed $nl layers, $(mb "$sz") MB; steps from its cache: $bah_fresh_cached; overlay storage $(mb "$ovl_bytes") MB"
  fi
  if [[ $pi_cache == 1 ]]; then
    echo "  paddle-image cold --cache-to, seconds per layer: $(layer_secs "$run/pi_seed.json"); registry cache: $(pi_rcache "$run/pi_seed.json")"
    read -r nl sz <<<"${MAN[pi_fresh]:-0 0}"
    echo "  paddle-image fresh runner, seconds per layer: $(layer_secs "$run/pi_fresh.json"); pushed $nl layers, $(mb "$sz") MB"
    echo "    layers: $(layer_status "$run/pi_fresh.json"); registry cache: $(pi_rcache "$run/pi_fresh.json")"
  else
    echo "  paddle-image fresh runner: skipped ($pi_src: 'build --help' has no --cache-from)"
  fi
  echo
  echo "goal:"
  local ok
  ok=$(awk -v a="${NET[bah_rebuild]}" -v b="${NET[pi_rebuild]}" 'BEGIN{print (a >= 10 * b) ? 1 : 0}')
  printf '  [%s] rebuild + push at least 10x faster than buildah, net of the proxy wait (%sx; %sx with it)\n' \
    "$( [[ $ok == 1 ]] && echo MET || echo MISSED )" "$(ratio "${NET[bah_rebuild]}" "${NET[pi_rebuild]}")" \
    "$(ratio "${SECS[bah_rebuild]}" "${SECS[pi_rebuild]}")"
  goal_line "fresh runner within 2x of the warm rebuild (paddle-image fresh / rebuild)" pi_fresh pi_rebuild le 2
  goal_line "fresh runner at least 10x faster than buildah's (buildah fresh / paddle-image fresh)" bah_fresh pi_fresh ge 10
  local k
  for k in "${!FAIL[@]}"; do
    [[ $k == bah_ovl_cold || $k == bah_fresh ]] && continue
    echo; echo "failed:"; break
  done
  local what
  for k in bah_ovl_cold_bud bah_ovl_cold_push bah_fresh_bud bah_fresh_push; do
    [[ -n ${FAIL[$k]:-} ]] || continue
    what=$([[ $k == bah_ovl_* ]] && echo "cold, writing the cache" || echo "fresh runner")
    printf '  buildah %s, %s (%s s, log %s):\n    %s\n' "$what" "${LABEL[$k]#"${LABEL[$k]%%[! ]*}"}" "${SECS[$k]}" \
      "$run/$k.out" "${FAIL[$k]}"
  done
  if ((${#WARN[@]})); then
    echo; echo "warnings:"; printf '  %s\n' "${WARN[@]}"
  fi
}

report | tee "$work/last-results-workflow.txt"
rm -f "$pi"   # the binary snapshot; logs and timings stay in $run
exit 0
