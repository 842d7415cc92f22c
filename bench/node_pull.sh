#!/usr/bin/env bash
# Node start-up benchmark: how long a GPU node waits from "pull this image" to an
# unpacked root file system in containerd, for the same Paddle-shaped content shipped
# four ways. A private containerd (Debian's, overlayfs snapshotter, its own root and
# socket under the work directory, a fresh root for every run) pulls from a local
# docker-registry; everything runs in a network namespace of the bench's own, whose
# loopback gets a token-bucket rate limit (tc tbf) for the second pass.
#
#   bench/node_pull.sh            full size: about 1.7 GB of content, 3 interleaved rounds
#   bench/node_pull.sh --smoke    about 100 MB, 1 round: checks the script, not the figures
#
# The image (the same staged trees for every variant):
#   cuda-a, cuda-b   CUDA-wheel-sized layers (NODE_CUDA_MB each)
#   framework        one framework layer (NODE_FRAMEWORK_MB) of real ELF shared objects
#                    and executables from this machine's /usr (each pass after the first
#                    with its bytes relabelled, so nothing repeats): compresses like the
#                    .so files of a paddlepaddle-gpu wheel, neither random nor zeros
#   models           NODE_MODELS_MB of random bytes (trained weights barely compress)
#   app              NODE_CODE_FILES small source files
# The variants, side by side in each round:
#   buildah.gzip     the trees COPYed by `buildah build --layers` from a Dockerfile,
#                    pushed with gzip: what most teams ship today
#   pi.gzip          paddle-image's default (gzip level 6)
#   pi.zstd          paddle-image, compression: zstd (level 3)
#   pi.node          compression: gpu-node (zstd level 12), or {format: zstd, level:
#                    NODE_LEVEL} when NODE_LEVEL is set
#   pi.split         paddle-image's recommended GPU-node settings (docs/spec.md
#                    "Settings for GPU nodes"): pi.node's compression and `split:
#                    NODE_SPLIT` (128Mi), each big layer shipped as parts
#   import           `warm export` of pi.node to an archive, then `ctr images import`
# each gzip variant twice: with unpigz (containerd 1.6 runs it when it is on PATH) and
# without (CONTAINERD_DISABLE_PIGZ=1, Go's own gzip).
#
# A pull goes through containerd's CRI image service, as kubelet pulls (PullImage over
# gRPC, sent by curl; containerd unpacks each layer once it is fetched); NODE_PULL=ctr
# uses `ctr images pull` instead, which fetches every layer before it unpacks any.
# Measured per run: seconds until the pull (or `ctr images import`) returns with the
# image unpacked, bytes read from the registry (its access log) or the archive, containerd's
# CPU seconds (its own and its children's, unpigz included). Printed: the median, min
# and max of each, and the ratio buildah.gzip seconds / variant seconds (> 1 = faster
# than buildah's image) per pass.
#
# Environment:
#   NODE_FRAMEWORK_MB (1024; smoke 48)   NODE_CUDA_MB (160; smoke 12)
#   NODE_MODELS_MB (200; smoke 16)       NODE_CODE_FILES (2000; smoke 200)
#   NODE_LEVEL (zstd level of pi.node and pi.split instead of compression: gpu-node)
#   NODE_SPLIT (pi.split's part size, 128Mi; smoke 16Mi)   NODE_PULL (cri or ctr; cri)
#   ROUNDS (3; smoke 1)   NODE_RATE_MB (rate-limited pass in MB/s, 50; 0 skips it)
#   PADDLE_IMAGE (default build/cli/paddle-image)   BENCH_WORK (default bench/work/node)
# Needs root (network namespace, tc, containerd, buildah), and Debian's containerd,
# buildah, docker-registry, pigz, iproute2, python3, GNU time.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
smoke=0
for arg in "$@"; do
  case "$arg" in
    --smoke) smoke=1 ;;
    -h | --help) sed -n '2,51p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "node_pull.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

if [[ -z ${NODE_PULL_NETNS:-} ]]; then
  [[ $(id -u) == 0 ]] || { echo "node_pull.sh: needs root (a network namespace, tc and containerd)" >&2; exit 2; }
  for tool in ip tc containerd ctr buildah docker-registry pigz unpigz python3; do
    command -v "$tool" >/dev/null || { echo "node_pull.sh: '$tool' not found" >&2; exit 1; }
  done
  ns=pi-node-pull-$$
  ip netns add "$ns"
  trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
  ip -n "$ns" link set lo up
  rc=0
  NODE_PULL_NETNS=$ns ip netns exec "$ns" bash "$0" "$@" || rc=$?
  exit "$rc"
fi
ns=$NODE_PULL_NETNS

if [[ $smoke == 1 ]]; then
  fw_mb=${NODE_FRAMEWORK_MB:-48} cuda_mb=${NODE_CUDA_MB:-12} models_mb=${NODE_MODELS_MB:-16}
  code_files=${NODE_CODE_FILES:-200} rounds=${ROUNDS:-1}
else
  fw_mb=${NODE_FRAMEWORK_MB:-1024} cuda_mb=${NODE_CUDA_MB:-160} models_mb=${NODE_MODELS_MB:-200}
  code_files=${NODE_CODE_FILES:-2000} rounds=${ROUNDS:-3}
fi
level=${NODE_LEVEL:-}
split=${NODE_SPLIT:-$([[ $smoke == 1 ]] && echo 16Mi || echo 128Mi)}
pull_via=${NODE_PULL:-cri}
[[ $pull_via == cri || $pull_via == ctr ]] || { echo "node_pull.sh: NODE_PULL is cri or ctr, not '$pull_via'" >&2; exit 2; }
rate=${NODE_RATE_MB:-50}
pi=${PADDLE_IMAGE:-$root/build/cli/paddle-image}
work=${BENCH_WORK:-$here/work/node}
[[ -x $pi ]] || { echo "node_pull.sh: $pi not found (build first, or set PADDLE_IMAGE)" >&2; exit 1; }

data=$work/data-f${fw_mb}-c${cuda_mb}-m${models_mb}-a${code_files}
run=$work/run
rm -rf "$run"
mkdir -p "$run/bin" "$work"
cp "$pi" "$run/bin/paddle-image" # a rebuild of build/ during the run changes nothing here
pi=$run/bin/paddle-image
source "$root/tests/support/registry/registry.sh"
trap registry_stop_all EXIT

# ---------------------------------------------------------------------------
# 1. Content (generated once per parameter set)
# ---------------------------------------------------------------------------
if [[ ! -f $data/.complete ]]; then
  echo "generating the staged trees in $data ..." >&2
  rm -rf "$data"
  mkdir -p "$data"
  python3 - "$data" "$fw_mb" "$cuda_mb" "$models_mb" "$code_files" <<'PY'
import os, random, sys
out, fw_mb, cuda_mb, models_mb, code_files = sys.argv[1], *map(int, sys.argv[2:])
# Real ELF files, each inode once, in a fixed order.
elves, seen = [], set()
for top in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/gcc", "/usr/lib/llvm-14", "/usr/libexec", "/usr/bin", "/usr/sbin"):
    for d, _, files in sorted(os.walk(top)):
        for f in sorted(files):
            p = os.path.join(d, f)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if not os.path.isfile(p) or os.path.islink(p) or st.st_size < 65536 or (st.st_dev, st.st_ino) in seen:
                continue
            with open(p, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            seen.add((st.st_dev, st.st_ino))
            elves.append(p)
if not elves:
    sys.exit("no ELF files found under /usr")
rng = random.Random(35)
def chunks():
    # Pass 0: the files as they are; later passes relabel every byte value (a fixed
    # permutation per pass), which keeps how they compress and makes no repeats.
    npass = 0
    while True:
        table = None
        if npass:
            perm = list(range(256))
            rng.shuffle(perm)
            table = bytes(perm)
        for p in elves:
            with open(p, "rb") as fh:
                b = fh.read()
            yield b if table is None else b.translate(table)
        npass += 1
source = chunks()
def fill(d, prefix, mb):
    os.makedirs(d, exist_ok=True)
    left, i = mb << 20, 0
    while left > 0:
        b = next(source)[:left]
        with open(os.path.join(d, f"{prefix}{i:04d}.so"), "wb") as fh:
            fh.write(b)
        left -= len(b)
        i += 1
fill(os.path.join(out, "cuda-a"), "libcublas_part", cuda_mb)
fill(os.path.join(out, "cuda-b"), "libcudnn_part", cuda_mb)
fill(os.path.join(out, "framework", "libs"), "libpaddle_part", fw_mb)
os.makedirs(os.path.join(out, "models"), exist_ok=True)
with open(os.path.join(out, "models", "model.pdiparams"), "wb") as fh:
    for _ in range(models_mb):
        fh.write(rng.randbytes(1 << 20))
words = [''.join(rng.choice('abcdefghijklmnopqrstuvwxyz_') for _ in range(rng.randint(2, 10))) for _ in range(500)]
for i in range(code_files):
    d = os.path.join(out, "app", f"pkg{i // 100:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"mod{i:04d}.py"), "w") as fh:
        fh.write(' '.join(rng.choice(words) for _ in range(rng.randint(40, 800))) + '\n')
PY
  touch "$data/.complete"
fi
bytes_of() { du -sb --apparent-size "$1" | cut -f1; }
mb() { awk -v b="$1" 'BEGIN{printf "%.1f", b / 1048576}'; }
fw_bytes=$(bytes_of "$data/framework")
fw_gz=$(tar -cf - -C "$data/framework" . | pigz -6 -p "$(nproc)" | wc -c)
fw_ratio=$(awk -v a="$fw_bytes" -v b="$fw_gz" 'BEGIN{printf "%.2f", a / b}')
total_bytes=$(bytes_of "$data")

# ---------------------------------------------------------------------------
# 2. The images (untimed): buildah's from a Dockerfile, paddle-image's from a spec
# ---------------------------------------------------------------------------
registry_start node open "$run/reg" >/dev/null
R=$NODE_HOST

# The specs live beside the trees (sources must be under the spec's directory).
cat >"$data/spec.yaml" <<YAML
base: scratch
layers:
  - name: cuda-a
    files: [{from: cuda-a/, to: /usr/local/cuda/lib64/}]
  - name: cuda-b
    files: [{from: cuda-b/, to: /usr/local/cuda/lib64/}]
  - name: framework
    files: [{from: framework/, to: /usr/local/lib/python3.10/dist-packages/paddle/}]
  - name: models
    data: [{from: models/, to: /models/}]
  - name: app
    files: [{from: app/, to: /app/}]
YAML
node_setting="gpu-node"
[[ -z $level ]] || node_setting="{format: zstd, level: $level}"
sed 's/^layers:/compression: '"$node_setting"'\nlayers:/' "$data/spec.yaml" >"$data/spec-node.yaml"
sed 's/^layers:/split: '"$split"'\nlayers:/' "$data/spec-node.yaml" >"$data/spec-split.yaml"
echo "building and pushing paddle-image's images ..." >&2
"$pi" build "$data/spec.yaml" -q -o "oci:$run/lay:gzip" --cache-dir "$run/cache"
"$pi" build "$data/spec.yaml" -q --compression zstd -o "oci:$run/lay:zstd" --cache-dir "$run/cache"
"$pi" build "$data/spec-node.yaml" -q -o "oci:$run/lay:node" --cache-dir "$run/cache"
"$pi" build "$data/spec-split.yaml" -q -o "oci:$run/lay:split" --cache-dir "$run/cache"
for v in gzip zstd node split; do
  "$pi" push "oci:$run/lay:$v" "$R/node/pi-$v:v1" --insecure -q
done

echo "building and pushing buildah's image ..." >&2
bdir=$run/buildah
mkdir -p "$bdir/root" "$bdir/runroot" "$bdir/varlib-up" "$bdir/varlib-work" "$bdir/containers" "$run/tmp"
printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' "$bdir/root" "$bdir/runroot" >"$bdir/storage.conf"
printf 'unqualified-search-registries = []\n' >"$bdir/registries.conf"
printf '[engine]\nimage_copy_tmp_dir = "%s"\n' "$run/tmp" >"$bdir/containers.conf"
cat >"$bdir/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY cuda-a/ /usr/local/cuda/lib64/
COPY cuda-b/ /usr/local/cuda/lib64/
COPY framework/ /usr/local/lib/python3.10/dist-packages/paddle/
COPY models/ /models/
COPY app/ /app/
DOCKERFILE
# Its own storage and configuration; /var/lib overlaid in a private mount namespace so
# containers/image's blob-info cache never touches the machine's (as bench/workflow.sh).
# shellcheck disable=SC2016
CONTAINERS_STORAGE_CONF=$bdir/storage.conf CONTAINERS_REGISTRIES_CONF=$bdir/registries.conf \
  CONTAINERS_CONF=$bdir/containers.conf TMPDIR=$run/tmp BUILDAH_FORMAT=oci \
  unshare --mount --propagation private bash -c 'mount -t overlay overlay \
  -o "lowerdir=/var/lib,upperdir=$1/varlib-up,workdir=$1/varlib-work" /var/lib &&
  mkdir -p /var/lib/containers && mount --bind "$1/containers" /var/lib/containers &&
  b=(buildah --root "$1/root" --runroot "$1/runroot" --storage-driver vfs) &&
  "${b[@]}" build -q --layers -f "$1/Dockerfile" -t localhost/node/buildah:v1 "$3" >/dev/null &&
  "${b[@]}" push -q --compression-format gzip --tls-verify=false localhost/node/buildah:v1 "docker://$2/node/buildah:v1"' \
  _ "$bdir" "$R" "$data"
rm -rf "$bdir" # gigabytes of vfs copies

echo "writing the node archive (warm export) ..." >&2
t0=$(date +%s.%N)
"$pi" warm export "oci:$run/lay:node" -o "$run/node.tar" --name "$R/node/imported:v1" -q >/dev/null
export_secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}')

# What each image ships (compressed layer bytes, from its manifest in the registry).
declare -A SHIPPED
for repo in buildah pi-gzip pi-zstd pi-node pi-split; do
  SHIPPED[$repo]=$(curl -s --noproxy '*' -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' "http://$R/v2/node/$repo/manifests/v1" |
    python3 -c 'import json,sys; print(sum(l["size"] for l in json.load(sys.stdin)["layers"]))')
done

# ---------------------------------------------------------------------------
# 3. Timed runs
# ---------------------------------------------------------------------------
declare -A SECS CPU MOVED
hz=$(getconf CLK_TCK)
cpu_of() { awk -v hz="$hz" '{printf "%.2f", ($14 + $15 + $16 + $17) / hz}' "/proc/$1/stat"; }
# cri_pull SOCKET REF: the CRI image service's PullImage, as kubelet calls it: gRPC over
# HTTP/2 on containerd's socket, the request (PullImageRequest{image: {image: REF}})
# encoded here; returns when containerd has the image unpacked.
cri_pull() {
  local sock=$1 ref=$2 req=$run/cri.req hdr=$run/cri.hdr
  python3 - "$ref" >"$req" <<'PY'
import struct, sys
ref = sys.argv[1].encode()
assert len(ref) < 124
spec = b"\x0a" + bytes([len(ref)]) + ref  # ImageSpec.image = 1
msg = b"\x0a" + bytes([len(spec)]) + spec  # PullImageRequest.image = 1
sys.stdout.buffer.write(b"\x00" + struct.pack(">I", len(msg)) + msg)
PY
  curl -sS --http2-prior-knowledge --unix-socket "$sock" -H 'content-type: application/grpc' -H 'te: trailers' \
    --data-binary @"$req" -D "$hdr" -o /dev/null http://localhost/runtime.v1.ImageService/PullImage &&
    grep -qi '^grpc-status: 0' "$hdr" ||
    { echo "node_pull.sh: CRI pull of $ref failed: $(grep -i '^grpc-' "$hdr" | tr -d '\r' | tr '\n' ' ')" >&2; return 1; }
}
blob_bytes() { # bytes of blob bodies the registry sent
  awk '$6 == "\"GET" && $7 ~ /\/blobs\/sha256:/ && $9 == 200 { n += $10 } END { printf "%.0f\n", n }' "$NODE_LOG"
}

one_run() { # PASS VARIANT
  local pass=$1 v=$2 dir=$run/ctd repo before after t0 t1 c0 c1 pid ns=bench cri=0 conf=""
  rm -rf "$dir"
  if [[ $pull_via == cri && $v != import ]]; then
    # The CRI plugin on, pulling plain HTTP from the bench's registry into overlayfs.
    ns=k8s.io cri=1
    mkdir -p "$dir/cni/bin" "$dir/cni/conf"
    conf="[plugins.\"io.containerd.grpc.v1.cri\"]
  sandbox_image = \"registry.k8s.io/pause:3.6\"
  [plugins.\"io.containerd.grpc.v1.cri\".containerd]
    snapshotter = \"overlayfs\"
  [plugins.\"io.containerd.grpc.v1.cri\".cni]
    bin_dir = \"$dir/cni/bin\"
    conf_dir = \"$dir/cni/conf\"
  [plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"$R\"]
    endpoint = [\"http://$R\"]"
  fi
  if [[ $v == *.nopigz ]]; then
    CONTAINERD_CRI=$cri CONTAINERD_DISABLE_PIGZ=1 containerd_start "$dir" overlayfs "$conf" >/dev/null
  else
    CONTAINERD_CRI=$cri containerd_start "$dir" overlayfs "$conf" >/dev/null
  fi
  pid=$_REG_LAST_PID
  sync
  before=$(blob_bytes)
  c0=$(cpu_of "$pid")
  t0=$(date +%s.%N)
  case $v in
    import)
      ctr -n bench images import --platform linux/amd64 "$run/node.tar" >"$run/ctr.out" 2>&1 ||
        { echo "node_pull.sh: ctr import failed: $(tail -3 "$run/ctr.out")" >&2; exit 1; } ;;
    *)
      repo=${v%.nopigz}
      repo=${repo%.pigz}
      repo=${repo/buildah.gzip/buildah}
      repo=${repo/pi./pi-}
      if ((cri)); then
        cri_pull "$dir/containerd.sock" "$R/node/$repo:v1" || exit 1
      else
        ctr -n bench images pull --plain-http --platform linux/amd64 "$R/node/$repo:v1" >"$run/ctr.out" 2>&1 ||
          { echo "node_pull.sh: ctr pull $repo failed: $(tail -3 "$run/ctr.out")" >&2; exit 1; }
      fi ;;
  esac
  t1=$(date +%s.%N)
  c1=$(cpu_of "$pid")
  after=$(blob_bytes)
  # The image is unpacked: its snapshot chain is there.
  local committed
  committed=$(ctr -n "$ns" snapshots --snapshotter overlayfs ls | awk '$NF == "Committed"' | wc -l)
  ((committed >= 5)) || { echo "node_pull.sh: $v: $committed committed snapshots after the pull, not 5" >&2; exit 1; }
  local key=$pass.$v
  SECS[$key]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}') "
  CPU[$key]+="$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b - a}') "
  if [[ $v == import ]]; then
    MOVED[$key]=$(stat -c %s "$run/node.tar")
  else
    MOVED[$key]=$((after - before))
  fi
  registry_stop containerd
  rm -rf "$dir"
}

variants=(buildah.gzip.pigz buildah.gzip.nopigz pi.gzip.pigz pi.gzip.nopigz pi.zstd pi.node pi.split import)
passes=(loopback)
((rate > 0)) && passes+=(rate)
for pass in "${passes[@]}"; do
  if [[ $pass == rate ]]; then
    # 1 MB of burst: above loopback's 64 KiB packets, small against a layer.
    tc qdisc add dev lo root tbf rate "$((rate * 8))mbit" burst 1mb latency 200ms
  fi
  for ((r = 1; r <= rounds; r++)); do
    # A different variant goes first in each round.
    n=${#variants[@]}
    for ((i = 0; i < n; i++)); do
      v=${variants[$(((i + r - 1) % n))]}
      [[ $pass == rate && $v == import ]] && continue # an archive on the node moves nothing over the link
      echo "[$pass round $r/$rounds] $v" >&2
      one_run "$pass" "$v"
    done
  done
  [[ $pass == rate ]] && tc qdisc del dev lo root
done

# ---------------------------------------------------------------------------
# 4. Report
# ---------------------------------------------------------------------------
stat3() { # "a b c" -> "median min max"
  tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.2f %.2f %.2f", m, a[1], a[NR] }'
}
report() {
  echo "paddle-image node start-up benchmark ($([[ $smoke == 1 ]] && echo smoke || echo full)): pull to an unpacked image"
  echo "  host:       $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/{print $2}') GB RAM, load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "  containerd: $(containerd --version | awk '{print $3}'), overlayfs snapshotter, fresh root per run; $(ctr --version)"
  echo "  pulled by:  $([[ $pull_via == cri ]] && echo "the CRI image service (PullImage, as kubelet)" || echo "ctr images pull")"
  echo "  buildah:    $(buildah --version | awk '{print $3}') (build --layers, push --compression-format gzip)"
  echo "  paddle-image: $("$pi" --version | head -1)"
  echo "  content:    $(mb "$total_bytes") MB: cuda-a + cuda-b $cuda_mb MB each, framework $fw_mb MB (gzip -6 ratio $fw_ratio), models $models_mb MB random, app $code_files files"
  echo "  shipped:    buildah gzip $(mb "${SHIPPED[buildah]}") MB, pi gzip $(mb "${SHIPPED[pi-gzip]}") MB, pi zstd $(mb "${SHIPPED[pi-zstd]}") MB, pi node ($node_setting) $(mb "${SHIPPED[pi-node]}") MB, pi split (split: $split) $(mb "${SHIPPED[pi-split]}") MB"
  echo "  warm export of pi.node: $export_secs s, archive $(mb "$(stat -c %s "$run/node.tar")") MB (not part of the import's time)"
  echo "  rounds:     $rounds, variants interleaved, a different one first each round"
  local pass v base
  for pass in "${passes[@]}"; do
    echo
    if [[ $pass == rate ]]; then
      echo "== behind a ${rate} MB/s link (tc tbf on the namespace's loopback) =="
    else
      echo "== loopback =="
    fi
    printf '%-22s %8s %8s %8s %10s %10s %14s %14s\n' variant "median s" "min s" "max s" "MB moved" "ctrd CPU s" "vs buildah.gz" "vs same pigz"
    for v in "${variants[@]}"; do
      [[ -n ${SECS[$pass.$v]:-} ]] || continue
      read -r med lo hi <<<"$(stat3 <<<"${SECS[$pass.$v]}")"
      read -r cpu _ _ <<<"$(stat3 <<<"${CPU[$pass.$v]}")"
      read -r base _ _ <<<"$(stat3 <<<"${SECS[$pass.buildah.gzip.nopigz]}")"
      local same=buildah.gzip.nopigz
      [[ $v == *.pigz || $v == pi.zstd || $v == pi.node || $v == pi.split || $v == import ]] && same=buildah.gzip.pigz
      local sbase
      read -r sbase _ _ <<<"$(stat3 <<<"${SECS[$pass.$same]}")"
      printf '%-22s %8.2f %8.2f %8.2f %10s %10.2f %13.2fx %13.2fx\n' "$v" "$med" "$lo" "$hi" "$(mb "${MOVED[$pass.$v]}")" "$cpu" \
        "$(awk -v a="$base" -v b="$med" 'BEGIN{printf "%.2f", a / b}')" "$(awk -v a="$sbase" -v b="$med" 'BEGIN{printf "%.2f", a / b}')"
    done
  done
  echo
  echo "vs buildah.gz: buildah's gzip image pulled by containerd without unpigz, / this; vs same pigz: against buildah's"
  echo "image under the same unpigz setting (zstd and import against buildah with unpigz, containerd's default when installed)."
}
report | tee "$work/last-results-$([[ $smoke == 1 ]] && echo smoke || echo full)-$pull_via.txt"
