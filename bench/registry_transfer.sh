#!/usr/bin/env bash
# Registry push/pull benchmark: paddle-image vs skopeo, against the limits of
# the registry itself (parallel curl PUTs and GETs of the same blobs).
#
#   bench/registry_transfer.sh            full size (BENCH_MB, default 1500 MB, 6 layers)
#   bench/registry_transfer.sh --prepare  only generate the test image (untimed)
#
# Environment:
#   BENCH_MB        total layer bytes of the test image, in MiB      (default 1500)
#   BENCH_LAYERS    number of layers (sizes n:n-1:...:1, largest first) (default 6)
#   BENCH_JOBS      parallel blobs for paddle-image --jobs and the curl baselines (default 4)
#   REPEAT          runs of each measurement; the best time is kept   (default 1)
#   BENCH_STORAGE   parent directory for registry storage and pulled layouts
#                   (default bench/work/registry-run; e.g. /dev/shm/x for tmpfs)
#   PADDLE_IMAGE    binary to test (default build/cli/paddle-image)
#
# Everything talks to docker-registry instances on 127.0.0.1 started with
# tests/support/registry/registry.sh, one fresh registry (new storage) per push.
# The image is generated once under bench/work/ (gitignored) and reused.
# See bench/README.md for what is measured and the goals.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

prepare=0
for arg in "$@"; do
  case "$arg" in
    --prepare) prepare=1 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "registry_transfer.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

mb_total=${BENCH_MB:-1500}
nlayers=${BENCH_LAYERS:-6}
jobs=${BENCH_JOBS:-4}
repeat=${REPEAT:-1}
pi=${PADDLE_IMAGE:-$root/build/cli/paddle-image}
py=/usr/bin/python3   # the system Python (stdlib only here); a pyenv python3 may be first on PATH
for v in "$mb_total" "$nlayers" "$jobs" "$repeat"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "registry_transfer.sh: BENCH_MB, BENCH_LAYERS, BENCH_JOBS and REPEAT must be positive integers" >&2; exit 2; }
done

for tool in curl skopeo sha256sum xargs openssl; do
  command -v "$tool" >/dev/null || { echo "registry_transfer.sh: '$tool' not found" >&2; exit 1; }
done
for f in /usr/bin/time /usr/bin/docker-registry "$py"; do
  [[ -x $f ]] || { echo "registry_transfer.sh: $f not found" >&2; exit 1; }
done
[[ -x $pi ]] || { echo "registry_transfer.sh: $pi not found or not executable (build first, or set PADDLE_IMAGE)" >&2; exit 1; }

work=$root/bench/work
img=$work/registry-image-${mb_total}mb-${nlayers}l
tag=bench
mkdir -p "$work"

# ---------------------------------------------------------------------------
# 1. Test image (generated once per parameter set)
# ---------------------------------------------------------------------------
# An OCI layout written directly: each layer is a tar holding one file of
# random bytes (Mersenne Twister, seeded: reproducible and incompressible),
# wrapped in gzip with stored (level 0) deflate blocks, so the blob is
# a valid tar+gzip layer about the size of its contents. Layers are written by
# two processes in parallel. Sizes are in the ratio n:n-1:...:1 and listed
# largest first in the manifest (so "manifest order" and "largest first"
# schedules are the same).
if [[ ! -f $img/.complete ]]; then
  echo "generating test image in $img ($mb_total MB, $nlayers layers) ..." >&2
  rm -rf "$img"
  mkdir -p "$img"
  gen_start=$(date +%s.%N)
  "$py" - "$img" "$mb_total" "$nlayers" "$tag" <<'PY'
import hashlib, json, multiprocessing, os, random, sys, tarfile, zlib

lay, total_mb, n, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
blobs = os.path.join(lay, "blobs", "sha256")
os.makedirs(blobs, exist_ok=True)
total = total_mb * 1048576
weights = list(range(n, 0, -1))
sizes = [total * w // sum(weights) for w in weights]
sizes[0] += total - sum(sizes)   # payload bytes; the blob adds tar+gzip framing (~0.02%)
EPOCH = 1717200000

def make_layer(i):
    payload = sizes[i]
    rng = random.Random(20241121 + i)
    tmp = os.path.join(blobs, f".tmp-layer-{i}")
    comp = zlib.compressobj(0, zlib.DEFLATED, 31)
    h_blob, h_tar = hashlib.sha256(), hashlib.sha256()
    size = 0
    with open(tmp, "wb") as f:
        def put(data):
            nonlocal size
            h_tar.update(data)
            out = comp.compress(data)
            if out:
                h_blob.update(out); f.write(out); size += len(out)
        ti = tarfile.TarInfo(f"data/layer-{i}.bin")
        ti.size, ti.mode, ti.mtime, ti.uname, ti.gname = payload, 0o644, EPOCH, "root", "root"
        d = tarfile.TarInfo("data")
        d.type, d.mode, d.mtime, d.uname, d.gname = tarfile.DIRTYPE, 0o755, EPOCH, "root", "root"
        put(d.tobuf(format=tarfile.GNU_FORMAT))
        put(ti.tobuf(format=tarfile.GNU_FORMAT))
        left = payload
        while left:
            k = min(left, 1 << 20)
            put(rng.randbytes(k))
            left -= k
        put(b"\0" * ((-payload) % 512) + b"\0" * 1024)
        out = comp.flush()
        h_blob.update(out); f.write(out); size += len(out)
    digest = "sha256:" + h_blob.hexdigest()
    os.rename(tmp, os.path.join(blobs, h_blob.hexdigest()))
    return {"digest": digest, "size": size, "diff_id": "sha256:" + h_tar.hexdigest()}

def write_blob(data):
    h = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, h), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + h, "size": len(data)}

with multiprocessing.Pool(2) as pool:
    layers = pool.map(make_layer, range(n), chunksize=1)

config = {
    "created": "2024-06-01T00:00:00Z",
    "architecture": "amd64", "os": "linux",
    "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
    "rootfs": {"type": "layers", "diff_ids": [l["diff_id"] for l in layers]},
    "history": [{"created": "2024-06-01T00:00:00Z", "created_by": f"registry_transfer.sh layer {i}"} for i in range(n)],
}
cdesc = write_blob(json.dumps(config, separators=(",", ":"), sort_keys=True).encode())
manifest = {
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **cdesc},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": l["digest"], "size": l["size"]} for l in layers],
}
mbytes = json.dumps(manifest, separators=(",", ":")).encode()
mdesc = write_blob(mbytes)
index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
         "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", **mdesc,
                        "annotations": {"org.opencontainers.image.ref.name": tag}}]}
with open(os.path.join(lay, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
with open(os.path.join(lay, "index.json"), "w") as f:
    json.dump(index, f)
# For the shell: one line per blob, "kind digest size path", layers in manifest order.
with open(os.path.join(lay, "blobs.txt"), "w") as f:
    for l in layers:
        f.write(f"layer {l['digest']} {l['size']} {os.path.join(blobs, l['digest'][7:])}\n")
    f.write(f"config {cdesc['digest']} {cdesc['size']} {os.path.join(blobs, cdesc['digest'][7:])}\n")
    f.write(f"manifest {mdesc['digest']} {mdesc['size']} {os.path.join(blobs, mdesc['digest'][7:])}\n")
PY
  sync
  touch "$img/.complete"
  echo "generated in $(awk -v a="$gen_start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >&2
fi

if [[ $prepare == 1 ]]; then
  echo "test image ready: oci:$img:$tag" >&2
  exit 0
fi

# Blob list: LAYER_DIGESTS/LAYER_FILES in manifest order, config and manifest.
LAYER_DIGESTS=() LAYER_FILES=()
total_bytes=0 layer_bytes=0
while read -r kind digest size path; do
  case $kind in
    layer) LAYER_DIGESTS+=("$digest"); LAYER_FILES+=("$path"); layer_bytes=$((layer_bytes + size)) ;;
    config) CONFIG_DIGEST=$digest CONFIG_FILE=$path ;;
    manifest) MANIFEST_DIGEST=$digest MANIFEST_FILE=$path; continue ;;
  esac
  total_bytes=$((total_bytes + size))   # layers + config: what a push uploads besides the manifest
done <"$img/blobs.txt"

# ---------------------------------------------------------------------------
# 2. Set-up
# ---------------------------------------------------------------------------
run=$work/registry-run                 # logs, timings, helper script, binary snapshot
storage=${BENCH_STORAGE:-$run}         # registry storage and pulled layouts
rm -rf "$run"
mkdir -p "$run" "$storage"
storage=$(cd "$storage" && pwd)
storage_fs=$(df --output=fstype "$storage" | tail -1)

# shellcheck source=../tests/support/registry/registry.sh
source "$root/tests/support/registry/registry.sh"
cleanup() {
  registry_stop_all
  # blobs go, registry logs (reg-*/NAME/registry.log) stay for a look after a failure
  rm -rf "$storage"/reg-*/*/storage "$storage"/pull-*
  return 0
}
trap cleanup EXIT

# Snapshot the binary so a rebuild of build/ during the run can't change what is measured.
cp "$pi" "$run/paddle-image"
pi_src=$pi
pi_sum=$(sha256sum "$pi" | cut -c1-12)
pi_date=$(date -u -r "$pi" '+%Y-%m-%d %H:%M UTC')
pi=$run/paddle-image

# One blob upload the way a minimal client does it: POST for an upload
# session, then a single PUT with the whole body and the known digest
# (monolithic upload). -T streams the file; `--data-binary @file` would read
# the whole blob into memory first. "Expect:" turns off the 100-continue wait.
cat >"$run/upload-one.sh" <<'SH'
#!/usr/bin/env bash
set -euo pipefail
host=$1 repo=$2 digest=$3 file=$4
loc=$(curl --noproxy '*' -sS -f -X POST -o /dev/null -D - "http://$host/v2/$repo/blobs/uploads/" |
  tr -d '\r' | awk 'tolower($1) == "location:" { print $2 }')
[[ -n $loc ]] || { echo "upload-one.sh: no Location from POST" >&2; exit 1; }
case $loc in http*) ;; *) loc="http://$host$loc" ;; esac
case $loc in *\?*) sep='&' ;; *) sep='?' ;; esac
curl --noproxy '*' -sS -f -X PUT -T "$file" -H 'Content-Type: application/octet-stream' -H 'Expect:' \
  -o /dev/null "$loc${sep}digest=$digest"
SH
chmod +x "$run/upload-one.sh"

curlq() { curl --noproxy '*' -sS -f "$@"; }

# registry CPU ticks (user+sys) of a running registry
proc_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)

declare -A SECS RSS CPU RCPU NRUNS
WARN=()

# timed KEY REG_PID CMD... : run CMD under GNU time -v. Records wall seconds
# (date, ms resolution), peak RSS, CPU seconds (user+sys) of CMD and its
# children, and CPU seconds the registry REG_PID used meanwhile. With REPEAT,
# the fastest run's figures are kept (RSS: the largest of all runs).
timed() {
  local key=$1 rpid=$2; shift 2
  local n=${NRUNS[$key]:-0}
  n=$((n + 1)); NRUNS[$key]=$n
  local base=$run/$key.$n
  sync   # don't let an earlier run's dirty pages be flushed inside this one
  local r0 r1 t0 t1
  r0=$(proc_ticks "$rpid")
  t0=$(date +%s.%N)
  if ! /usr/bin/time -v -o "$base.time" "$@" >"$base.out" 2>"$base.err"; then
    echo "registry_transfer.sh: '$key' failed: $*" >&2
    tail -n 20 "$base.err" >&2
    grep -E 'Command|Exit status' "$base.time" >&2 || true
    exit 1
  fi
  t1=$(date +%s.%N)
  r1=$(proc_ticks "$rpid")
  local secs kb cpu rcpu
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
  kb=$(awk -F': ' '/Maximum resident set size/{print $2}' "$base.time")
  cpu=$(awk -F': ' '/User time|System time/{s += $2} END{printf "%.2f", s}' "$base.time")
  rcpu=$(awk -v a="$r0" -v b="$r1" -v hz="$hz" 'BEGIN{printf "%.2f", (b - a) / hz}')
  if [[ -z ${SECS[$key]:-} ]] || awk -v a="$secs" -v b="${SECS[$key]}" 'BEGIN{exit !(a < b)}'; then
    SECS[$key]=$secs CPU[$key]=$cpu RCPU[$key]=$rcpu
  fi
  if [[ -z ${RSS[$key]:-} ]] || ((kb > RSS[$key])); then RSS[$key]=$kb; fi
  LAST_OUT=$base.out
  printf '  %-16s run %d: %8.3f s %8.1f MB RSS  cpu %6.2f s  registry cpu %6.2f s\n' \
    "$key" "$n" "$secs" "$(awk -v k="$kb" 'BEGIN{print k/1024}')" "$cpu" "$rcpu" >&2
}

# fresh_registry NAME: a new open registry with empty storage; sets REG_HOST, REG_PID.
reg_seq=0
fresh_registry() {
  reg_seq=$((reg_seq + 1))
  local dir=$storage/reg-$reg_seq
  rm -rf "$dir"
  registry_start "$1" open "$dir" >/dev/null
  local host_var=${1^^}_HOST pid_var=${1^^}_PID
  REG_HOST=${!host_var} REG_PID=${!pid_var} REG_DIR=$dir
}
drop_registry() { # NAME DIR
  registry_stop "$1"
  rm -rf "$2"
}

# check_manifest HOST REPO:TAG LABEL: the registry must serve the test image's manifest.
check_manifest() {
  local host=$1 ref=$2 label=$3 got
  got=$(curlq -I -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$host/v2/${ref%%:*}/manifests/${ref#*:}" | tr -d '\r' |
    awk 'tolower($1) == "docker-content-digest:" { print $2 }') || got=""
  if [[ $got != "$MANIFEST_DIGEST" ]]; then
    WARN+=("$label: registry has manifest '${got:-none}', expected $MANIFEST_DIGEST")
  fi
}

# check_layout DIR LABEL: a pulled layout must hold the manifest (by tag) and every blob, full size.
check_layout() {
  local msg
  if ! msg=$("$py" - "$1" "$tag" "$img/blobs.txt" <<'PY'
import json, os, sys
lay, tag, listing = sys.argv[1:4]
idx = json.load(open(os.path.join(lay, "index.json")))
ms = [m for m in idx.get("manifests", []) if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
if len(ms) != 1:
    sys.exit(f"{len(ms)} manifests tagged {tag} in index.json")
want = {}
for line in open(listing):
    kind, digest, size, _ = line.split()
    want[digest] = int(size)
mdig = [l.split()[1] for l in open(listing) if l.startswith("manifest ")][0]
if ms[0]["digest"] != mdig:
    print(f"manifest digest {ms[0]['digest']} differs from the source's {mdig}")
for digest, size in want.items():
    p = os.path.join(lay, "blobs", *digest.split(":"))
    if digest == mdig and ms[0]["digest"] != mdig:
        continue   # reported above
    if not os.path.exists(p):
        sys.exit(f"blob {digest} missing")
    if os.path.getsize(p) != size:
        sys.exit(f"blob {digest}: {os.path.getsize(p)} bytes, expected {size}")
PY
  ); then
    echo "registry_transfer.sh: $2: pulled layout $1 is incomplete: $msg" >&2
    exit 1
  fi
  if [[ -n $msg ]]; then WARN+=("$2: $msg"); fi
}

pi_stats() { # JSON-FILE FIELD -> stats.FIELD
  "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"][sys.argv[2]])' "$1" "$2"
}

# ---------------------------------------------------------------------------
# 3. Timed runs
# ---------------------------------------------------------------------------
src_repo=bench/src
dst_repo=bench/img

echo "warm-up read of the source image" >&2
cat "$img"/blobs/sha256/* >/dev/null

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
own_ticks() { awk '{print $14+$15+$16+$17}' /proc/$$/stat; }
busy_start=$(busy_ticks); own_start=$(own_ticks); wall_start=$(date +%s.%N)

ingest_list() { # one "digest file" pair per line, manifest order
  local i
  for ((i = 0; i < ${#LAYER_DIGESTS[@]}; i++)); do echo "${LAYER_DIGESTS[$i]} ${LAYER_FILES[$i]}"; done
  echo "$CONFIG_DIGEST $CONFIG_FILE"
}
ingest_list >"$run/ingest.list"
# shellcheck disable=SC2016
curl_ingest() { # HOST REPO
  timed ingest "$REG_PID" xargs -P "$jobs" -L 1 "$run/upload-one.sh" "$1" "$2" <"$run/ingest.list"
}

for ((r = 1; r <= repeat; r++)); do
  echo "[run $r/$repeat]" >&2
  # 1. Registry limits with curl. The first ingest registry is kept: it serves every pull.
  if ((r == 1)); then
    fresh_registry src
    SRC_HOST=$REG_HOST SRC_PID=$REG_PID SRC_DIR=$REG_DIR
    curl_ingest "$SRC_HOST" "$src_repo"
    # complete the image (untimed) so the pull tools can read it
    curlq -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
      --data-binary @"$MANIFEST_FILE" -o /dev/null "http://$SRC_HOST/v2/$src_repo/manifests/$tag"
    check_manifest "$SRC_HOST" "$src_repo:$tag" "curl ingest"
  else
    fresh_registry ing
    curl_ingest "$REG_HOST" "$src_repo"
    drop_registry ing "$REG_DIR"
  fi
  for d in "${LAYER_DIGESTS[@]}" "$CONFIG_DIGEST"; do echo "http://$SRC_HOST/v2/$src_repo/blobs/$d"; done >"$run/serve.list"
  timed serve "$SRC_PID" xargs -P "$jobs" -n 1 curl --noproxy '*' -sS -f -o /dev/null <"$run/serve.list"
  # extra: the same downloads stored as files next to the pulled layouts, then
  # synced (the pull tools fsync every blob): what storing the bytes costs here
  rm -rf "$storage/pull-curl"; mkdir -p "$storage/pull-curl"
  # shellcheck disable=SC2016  # $1..$3 are expanded by the inner bash
  timed serve_files "$SRC_PID" bash -c 'cd "$1" && xargs -P "$2" -n 1 curl --noproxy "*" -sS -f -O <"$3" && sync -f .' \
    _ "$storage/pull-curl" "$jobs" "$run/serve.list"
  rm -rf "$storage/pull-curl"

  # 2. skopeo push into a fresh registry
  fresh_registry sk
  timed skopeo_push "$REG_PID" skopeo copy --dest-tls-verify=false \
    "oci:$img:$tag" "docker://$REG_HOST/$dst_repo:$tag"
  check_manifest "$REG_HOST" "$dst_repo:$tag" "skopeo push"
  drop_registry sk "$REG_DIR"

  # 3./4. paddle-image push into a fresh registry, then the same push again
  fresh_registry pi
  timed pi_push "$REG_PID" "$pi" push "oci:$img:$tag" "$REG_HOST/$dst_repo:$tag" --insecure --jobs "$jobs" --json -q
  cp "$LAST_OUT" "$run/pi_push.json"
  check_manifest "$REG_HOST" "$dst_repo:$tag" "paddle-image push"
  up=$(pi_stats "$run/pi_push.json" bytes_uploaded)
  if ((up < total_bytes)); then
    WARN+=("paddle-image push uploaded $up bytes, expected at least $total_bytes (fresh registry)")
  fi
  timed pi_repush "$REG_PID" "$pi" push "oci:$img:$tag" "$REG_HOST/$dst_repo:$tag" --insecure --jobs "$jobs" --json -q
  cp "$LAST_OUT" "$run/pi_repush.json"
  up=$(pi_stats "$run/pi_repush.json" bytes_uploaded)
  if ((up != 0)); then WARN+=("repeated paddle-image push uploaded $up bytes, expected 0"); fi
  drop_registry pi "$REG_DIR"

  # pulls, all from the registry the curl ingest filled
  rm -rf "$storage/pull-sk"
  timed skopeo_pull "$SRC_PID" skopeo copy --src-tls-verify=false \
    "docker://$SRC_HOST/$src_repo:$tag" "oci:$storage/pull-sk:$tag"
  check_layout "$storage/pull-sk" "skopeo pull"
  rm -rf "$storage/pull-sk"

  rm -rf "$storage/pull-pi"
  timed pi_pull "$SRC_PID" "$pi" pull "$SRC_HOST/$src_repo:$tag" -o "oci:$storage/pull-pi:$tag" \
    --insecure --jobs "$jobs" -q
  check_layout "$storage/pull-pi" "paddle-image pull"
  rm -rf "$storage/pull-pi"
done
registry_stop_all   # before reading CPU counters: stopped children count in our own ticks
rm -rf "$SRC_DIR"

busy_end=$(busy_ticks); own_end=$(own_ticks); wall_end=$(date +%s.%N)
other_cpu=$(awk -v b=$((busy_end - busy_start)) -v o=$((own_end - own_start)) -v hz="$hz" \
  'BEGIN{x = (b - o) / hz; if (x < 0) x = 0; printf "%.1f", x}')
wall=$(awk -v a="$wall_start" -v b="$wall_end" 'BEGIN{printf "%.0f", b - a}')

# ---------------------------------------------------------------------------
# 4. Report
# ---------------------------------------------------------------------------
mbps() { awk -v b="$total_bytes" -v t="$1" 'BEGIN{ if (t <= 0) print "-"; else printf "%.0f", b/1048576/t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b <= 0) b = 0.001; printf "%.2f", a/b }'; }   # a/b
rssmb() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }

names=(ingest serve serve_files skopeo_push pi_push pi_repush skopeo_pull pi_pull)
declare -A LABEL=(
  [ingest]="registry ingest limit (curl PUT x$jobs)"
  [serve]="registry serve limit (curl GET x$jobs)"
  [serve_files]="  same, to files + sync (extra)"
  [skopeo_push]="skopeo push"
  [pi_push]="paddle-image push --jobs $jobs"
  [pi_repush]="paddle-image push, repeated"
  [skopeo_pull]="skopeo pull"
  [pi_pull]="paddle-image pull --jobs $jobs"
)

report() {
  echo
  echo "paddle-image registry push/pull benchmark"
  echo "  host:    $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/{print $2}') GB RAM"
  echo "  load:    $load_start at start (1/5/15-min load average)"
  echo "  other:   ${other_cpu} CPU-seconds used by other processes during the ${wall} s run (incl. untimed set-up; a few seconds is kernel writeback and noise)"
  echo "  paddle-image: $pi_src (version $("$pi" --version 2>/dev/null | head -1), built $pi_date, sha256 $pi_sum...)"
  echo "  tools:   $(skopeo --version); $(curl --version | head -1 | cut -d' ' -f1-2); $(/usr/bin/docker-registry --version | awk '{print $2, $3}')"
  echo "  image:   $nlayers layers, $(awk -v b="$total_bytes" 'BEGIN{printf "%.1f", b/1048576}') MB of blobs (random data in stored gzip), generated once: oci:$img:$tag"
  echo "  storage: registries and pulled layouts on $storage_fs ($storage); source layout and registry blobs warm in the page cache"
  echo "  runs:    $repeat per measurement, best time kept; every push goes to a fresh registry; all pulls from one registry filled by the curl ingest"
  echo
  printf '%-38s %8s %7s %8s %9s %9s\n' name seconds MB/s "RSS MB" "CPU s" "reg CPU s"
  local n
  for n in "${names[@]}"; do
    printf '%-38s %8.3f %7s %8.1f %9.2f %9.2f\n' "${LABEL[$n]}" "${SECS[$n]}" \
      "$( [[ $n == pi_repush ]] && echo - || mbps "${SECS[$n]}" )" "$(rssmb "${RSS[$n]}")" "${CPU[$n]}" "${RCPU[$n]}"
  done
  echo "  (MB/s = layer+config bytes / seconds; RSS = peak of the largest single process (for the curl rows: one curl);"
  echo "   CPU s = user+sys of the client; reg CPU s = of the registry process during the run)"
  echo
  echo "ratios (throughput; > 1 = paddle-image faster):"
  printf '  paddle-image push / registry ingest limit: %s\n' "$(ratio "${SECS[ingest]}" "${SECS[pi_push]}")"
  printf '  paddle-image push / skopeo push:           %s\n' "$(ratio "${SECS[skopeo_push]}" "${SECS[pi_push]}")"
  printf '  paddle-image pull / registry serve limit:  %s\n' "$(ratio "${SECS[serve]}" "${SECS[pi_pull]}")"
  printf '  paddle-image pull / curl GET to files:     %s\n' "$(ratio "${SECS[serve_files]}" "${SECS[pi_pull]}")"
  printf '  paddle-image pull / skopeo pull:           %s\n' "$(ratio "${SECS[skopeo_pull]}" "${SECS[pi_pull]}")"
  printf '  skopeo push / registry ingest limit:       %s\n' "$(ratio "${SECS[ingest]}" "${SECS[skopeo_push]}")"
  printf '  skopeo pull / registry serve limit:        %s\n' "$(ratio "${SECS[serve]}" "${SECS[skopeo_pull]}")"
  echo
  echo "goals:"
  goal() { printf '  [%s] %s: %s\n' "$( [[ $1 == 1 ]] && echo PASS || echo MISS )" "$2" "$3"; }
  # speed goals: A seconds / B seconds >= MIN, decided on the unrounded ratio
  speed_goal() { # A B MIN TEXT
    local v
    v=$(awk -v a="$1" -v b="$2" 'BEGIN{ if (b <= 0) b = 0.001; printf "%.3f", a/b }')
    goal "$(awk -v a="$1" -v b="$2" -v m="$3" 'BEGIN{ if (b <= 0) b = 0.001; print (a / b >= m) ? 1 : 0 }')" "$4" "$v"
  }
  local ok
  speed_goal "${SECS[ingest]}" "${SECS[pi_push]}" 0.90 "push >= 0.90 x registry ingest limit"
  speed_goal "${SECS[skopeo_push]}" "${SECS[pi_push]}" 1.0 "push >= 1.0 x skopeo push"
  speed_goal "${SECS[skopeo_pull]}" "${SECS[pi_pull]}" 2.0 "pull >= 2.0 x skopeo pull"
  ok=$((RSS[pi_push] < 100 * 1024)); goal "$ok" "push peak RSS < 100 MB" "$(rssmb "${RSS[pi_push]}") MB"
  ok=$((RSS[pi_pull] < 100 * 1024)); goal "$ok" "pull peak RSS < 100 MB" "$(rssmb "${RSS[pi_pull]}") MB"
  goal "$(awk -v v="${SECS[pi_repush]}" 'BEGIN{print (v < 1.0) ? 1 : 0}')" "repeated push < 1 s" "${SECS[pi_repush]} s"
  if ((${#WARN[@]})); then
    echo; echo "warnings:"; printf '  %s\n' "${WARN[@]}"
  fi
}

report | tee "$work/last-results-registry-${mb_total}mb.txt"
rm -f "$pi"   # the binary snapshot; logs and timings stay in $run
exit 0
