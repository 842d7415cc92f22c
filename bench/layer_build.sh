#!/usr/bin/env bash
# Layer-build benchmark: paddle-image vs tar|gzip, tar|pigz and umoci.
#
#   bench/layer_build.sh            full size (30000 small files + 2 x 300 MB random)
#   bench/layer_build.sh --smoke    tiny tree, finishes in well under 30 s
#   bench/layer_build.sh --prepare  only generate the test tree (add --smoke for the tiny one)
#
# Environment:
#   BENCH_SMALL_FILES  number of small text-ish files       (default 30000; smoke 2000)
#   BENCH_BIG_FILES    number of large random files          (default 2;     smoke 1)
#   BENCH_BIG_MB       size of each large file in MB         (default 300;   smoke 20)
#   BENCH_THREADS      threads for pigz / zstd / paddle -j   (default 2)
#   BENCH_SIZES        1 = also measure tar|pigz and tar|zstd output sizes (extra untimed pass) (default 1)
#   PADDLE_IMAGE       binary to test (default build/cli/paddle-image)
#
# Test data is generated once and kept under bench/work/ (gitignored), keyed by
# its parameters. See bench/README.md for what is measured and the goals.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

smoke=0
prepare=0
for arg in "$@"; do
  case "$arg" in
    --smoke) smoke=1 ;;
    --prepare) prepare=1 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "layer_build.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

if [[ $smoke == 1 ]]; then
  small_files=${BENCH_SMALL_FILES:-2000}
  big_files=${BENCH_BIG_FILES:-1}
  big_mb=${BENCH_BIG_MB:-20}
else
  small_files=${BENCH_SMALL_FILES:-30000}
  big_files=${BENCH_BIG_FILES:-2}
  big_mb=${BENCH_BIG_MB:-300}
fi
threads=${BENCH_THREADS:-2}
measure_sizes=${BENCH_SIZES:-1}
pi=${PADDLE_IMAGE:-$root/build/cli/paddle-image}

for tool in tar gzip pigz zstd sha256sum umoci python3; do
  command -v "$tool" >/dev/null || { echo "layer_build.sh: '$tool' not found" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "layer_build.sh: /usr/bin/time (GNU time) not found" >&2; exit 1; }
[[ -x $pi ]] || { echo "layer_build.sh: $pi not found or not executable (build first, or set PADDLE_IMAGE)" >&2; exit 1; }

work=$root/bench/work
data=$work/data-s${small_files}-b${big_files}x${big_mb}
run=$work/run
mkdir -p "$work"

# ---------------------------------------------------------------------------
# 1. Test tree (generated once per parameter set)
# ---------------------------------------------------------------------------
if [[ ! -f $data/.complete ]]; then
  echo "generating test tree in $data ..." >&2
  rm -rf "$data"
  mkdir -p "$data/tree/small" "$data/tree/big"
  # Small files: deterministic pseudo source/config text, 200 B .. ~6 KB
  # (log-uniform, median ~1 KB), 25 files per leaf dir, 3 dir levels.
  python3 - "$data/tree/small" "$small_files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(20240601)
words = [''.join(rng.choice('abcdefghijklmnopqrstuvwxyz_') for _ in range(rng.randint(2, 10)))
         for _ in range(800)]
punct = ['(', ')', ':', ' = ', ', ', '.', ' + ', '[', ']', '"', '  # ']
exts = ['.py', '.py', '.py', '.json', '.yaml', '.txt', '.md', '.cfg']
for i in range(n):
    leaf = i // 25
    d = os.path.join(root, f"p{leaf // 100:02d}", f"q{(leaf // 10) % 10}", f"r{leaf % 10}")
    if i % 25 == 0:
        os.makedirs(d, exist_ok=True)
    size = int(200 * (30 ** rng.random()))          # 200 B .. 6 KB, log-uniform
    out, length = [], 0
    while length < size:
        line = ' ' * (4 * rng.randint(0, 3)) + ''.join(
            rng.choice(words) + (rng.choice(punct) if rng.random() < 0.4 else ' ')
            for _ in range(rng.randint(3, 12))) + '\n'
        out.append(line)
        length += len(line)
    with open(os.path.join(d, f"f{i:06d}{rng.choice(exts)}"), 'w') as f:
        f.write(''.join(out)[:size])
PY
  # Large files: incompressible.
  for ((b = 0; b < big_files; b++)); do
    head -c "${big_mb}M" /dev/urandom >"$data/tree/big/blob-$b.bin"
  done
  for which in whole big; do
    from=tree/; [[ $which == big ]] && from=tree/big/
    cat >"$data/$which.yaml" <<EOF
base: scratch
layers:
  - name: tree
    files:
      - from: $from
        to: /data/
compression: {format: gzip, level: 6}
EOF
  done
  touch "$data/.complete"
fi

if [[ $prepare == 1 ]]; then
  echo "test tree ready: $data" >&2
  exit 0
fi

small_bytes=$(du -sb --apparent-size "$data/tree/small" | cut -f1)
big_bytes=$(du -sb --apparent-size "$data/tree/big" | cut -f1)

# ---------------------------------------------------------------------------
# 2. Timed runs
# ---------------------------------------------------------------------------
declare -A SECS RSS SIZE
rm -rf "$run"
mkdir -p "$run"
# Snapshot the binary so a rebuild of build/ during the run can't change what is measured.
cp "$pi" "$run/paddle-image"
pi_src=$pi
pi_sum=$(sha256sum "$pi" | cut -c1-12)
pi_date=$(date -u -r "$pi" '+%Y-%m-%d %H:%M UTC')
pi=$run/paddle-image

# timed KEY CMD... : run CMD under GNU time; record elapsed seconds and peak RSS.
# For a shell pipeline %M is the peak RSS of the largest single process in it.
timed() {
  local key=$1; shift
  sync   # don't let an earlier run's dirty pages be flushed inside this one
  if ! /usr/bin/time -f '%e %M' -o "$run/$key.time" "$@" >"$run/$key.out" 2>"$run/$key.err"; then
    echo "layer_build.sh: '$key' failed:" >&2
    cat "$run/$key.err" "$run/$key.time" >&2
    exit 1
  fi
  local secs kb
  read -r secs kb <"$run/$key.time"
  SECS[$key]=$secs
  RSS[$key]=$kb
  printf '  %-22s %8.2f s %8.1f MB\n' "$key" "$secs" "$(awk -v k="$kb" 'BEGIN{print k/1024}')" >&2
}

layer_size() { # metadata.json -> compressed size of the (only) layer
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["size"])' "$1"
}
layer_field() { # metadata.json field -> value of layers[0][field]
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0][sys.argv[2]])' "$1" "$2"
}

# shellcheck disable=SC2016  # the bash -c scripts' $1/$2 are expanded by the inner bash
bench_subset() { # SUBSET SRC_DIR SPEC
  local s=$1 src=$2 spec=$3
  echo "[$s] warm-up read" >&2
  # Not `tar cf - DIR >/dev/null`: GNU tar notices /dev/null and skips reading file data.
  tar -cf - -C "$src" . | cat >/dev/null

  echo "[$s] timing" >&2
  timed "$s.gzip" bash -c 'set -o pipefail; tar --sort=name -cf - -C "$1" . | gzip -6 | sha256sum' _ "$src"
  timed "$s.pigz" bash -c 'set -o pipefail; tar --sort=name -cf - -C "$1" . | pigz -6 -p "$2" | sha256sum' _ "$src" "$threads"
  timed "$s.zstd" bash -c 'set -o pipefail; tar --sort=name -cf - -C "$1" . | zstd -q -3 -T"$2" | sha256sum' _ "$src" "$threads"

  # umoci: layout + empty image prepared untimed; only `umoci insert` is timed
  # (walks the tree, tars, compresses with pgzip at its default level, hashes, writes the blob).
  umoci init --layout "$run/$s.umoci" >/dev/null
  umoci new --image "$run/$s.umoci:t" >/dev/null
  timed "$s.umoci" umoci insert --no-history --image "$run/$s.umoci:t" "$src" /data
  local blob
  blob=$(python3 - "$run/$s.umoci" <<'PY'
import json, os, sys
lay = sys.argv[1]
def blob(d): return os.path.join(lay, 'blobs', *d.split(':'))
idx = json.load(open(os.path.join(lay, 'index.json')))
man = json.load(open(blob(idx['manifests'][0]['digest'])))
print(man['layers'][-1]['size'])
PY
)
  SIZE[$s.umoci]=$blob
  rm -rf "$run/$s.umoci"

  # paddle-image: cold (fresh cache), no-change rebuild (same cache, new output), cold zstd.
  local cache=$run/$s.cache
  timed "$s.pi_cold" "$pi" build "$spec" -o "oci:$run/$s.out-cold:t" --cache-dir "$cache" \
    -j "$threads" -q --metadata-file "$run/$s.cold.json"
  timed "$s.pi_rebuild" "$pi" build "$spec" -o "oci:$run/$s.out-rebuild:t" --cache-dir "$cache" \
    -j "$threads" -q --metadata-file "$run/$s.rebuild.json"
  timed "$s.pi_zstd" "$pi" build "$spec" -o "oci:$run/$s.out-zstd:t" --cache-dir "$run/$s.cache-zstd" \
    -j "$threads" --compression zstd -q --metadata-file "$run/$s.zstd.json"
  SIZE[$s.pi_cold]=$(layer_size "$run/$s.cold.json")
  SIZE[$s.pi_rebuild]=$(layer_size "$run/$s.rebuild.json")
  SIZE[$s.pi_zstd]=$(layer_size "$run/$s.zstd.json")

  # Sanity: the rebuild must reuse the cached layer and produce the same digest.
  local st d1 d2
  st=$(layer_field "$run/$s.rebuild.json" status)
  d1=$(layer_field "$run/$s.cold.json" digest)
  d2=$(layer_field "$run/$s.rebuild.json" digest)
  if [[ $st != reused || $d1 != "$d2" ]]; then
    echo "WARNING [$s]: no-change rebuild status='$st', digest cold=$d1 rebuild=$d2" >&2
    WARN+=("[$s] no-change rebuild status '$st' (expected 'reused') or digest changed")
  fi
  rm -rf "$run/$s.out-cold" "$run/$s.out-rebuild" "$run/$s.out-zstd" "$cache" "$run/$s.cache-zstd"

  if [[ $measure_sizes == 1 ]]; then
    echo "[$s] untimed: output sizes of tar|pigz and tar|zstd" >&2
    SIZE[$s.pigz]=$(tar --sort=name -cf - -C "$src" . | pigz -6 -p "$threads" | wc -c)
    SIZE[$s.zstd]=$(tar --sort=name -cf - -C "$src" . | zstd -q -3 -T"$threads" | wc -c)
  fi
}

WARN=()
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# CPU ticks used machine-wide vs by this script and its children, to tell
# whether something else (a compiler, ...) competed for the 2 cores.
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
own_ticks() { awk '{print $14+$15+$16+$17}' /proc/$$/stat; }
busy_start=$(busy_ticks); own_start=$(own_ticks); wall_start=$(date +%s.%N)
bench_subset whole "$data/tree" "$data/whole.yaml"
subsets=(whole)
if ((big_files > 0)); then
  subsets+=(big)
  bench_subset big "$data/tree/big" "$data/big.yaml"
fi
busy_end=$(busy_ticks); own_end=$(own_ticks); wall_end=$(date +%s.%N)
hz=$(getconf CLK_TCK)
other_cpu=$(awk -v b=$((busy_end - busy_start)) -v o=$((own_end - own_start)) -v hz="$hz" \
  'BEGIN{x = (b - o) / hz; if (x < 0) x = 0; printf "%.1f", x}')
wall=$(awk -v a="$wall_start" -v b="$wall_end" 'BEGIN{printf "%.0f", b - a}')

# ---------------------------------------------------------------------------
# 3. Report
# ---------------------------------------------------------------------------
mb() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1048576}'; }
mb2() { awk -v b="$1" 'BEGIN{printf "%.2f", b/1048576}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b <= 0) b = 0.005; printf "%.2f", a/b }'; }   # a/b, guard 0.00 s
pct() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b <= 0) b = 0.005; printf "%.1f", 100*a/b }'; }

names=(gzip pigz zstd umoci pi_cold pi_rebuild pi_zstd)
declare -A LABEL=(
  [gzip]="tar | gzip -6 | sha256sum"
  [pigz]="tar | pigz -6 -p$threads | sha256sum"
  [zstd]="tar | zstd -3 -T$threads | sha256sum"
  [umoci]="umoci insert (pgzip, default level)"
  [pi_cold]="paddle-image cold, gzip-6 -j$threads"
  [pi_rebuild]="paddle-image no-change rebuild"
  [pi_zstd]="paddle-image cold, zstd-3 -j$threads"
)

report() {
  echo
  echo "paddle-image layer build benchmark ($( [[ $smoke == 1 ]] && echo smoke || echo full ))"
  echo "  host:  $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/{print $2}') GB RAM"
  echo "  load:  $load_start at start (1/5/15-min load average; the end figure would mostly be this script's own work)"
  echo "  other: ${other_cpu} CPU-seconds used by other processes during the ${wall} s of timed work (a few seconds is kernel writeback and noise)"
  echo "  paddle-image: $pi_src (version $("$pi" --version 2>/dev/null | head -1), built $pi_date, sha256 $pi_sum...)"
  echo "  tools: $(tar --version | head -1); pigz $(pigz --version 2>&1 | awk '{print $2}'); $(zstd --version | sed 's/^\*\*\* //; s/,.*//'); umoci $(umoci --version | awk '{print $3}')"
  echo "  data:  $small_files small files ($(mb "$small_bytes") MB) + $big_files x $big_mb MB random ($(mb "$big_bytes") MB)"
  local s in_bytes peak
  for s in "${subsets[@]}"; do
    if [[ $s == whole ]]; then
      in_bytes=$((small_bytes + big_bytes))
      echo; echo "== whole tree: $small_files small files + $big_files x $big_mb MB random ($(mb "$in_bytes") MB) =="
    else
      in_bytes=$big_bytes
      echo; echo "== incompressible only: $big_files x $big_mb MB random ($(mb "$in_bytes") MB) =="
    fi
    printf '%-38s %9s %9s %12s %10s\n' name seconds MB/s "peak RSS MB" "output MB"
    local n
    for n in "${names[@]}"; do
      local k=$s.$n
      printf '%-38s %9.2f %9s %12.1f %10s\n' "${LABEL[$n]}" "${SECS[$k]}" \
        "$(awk -v b="$in_bytes" -v t="${SECS[$k]}" 'BEGIN{ if (t <= 0) print "-"; else printf "%.0f", b/1048576/t }')" \
        "$(awk -v k="${RSS[$k]}" 'BEGIN{print k/1024}')" \
        "$( [[ -n ${SIZE[$k]:-} ]] && mb2 "${SIZE[$k]}" || echo - )"
    done
    echo "ratios (baseline seconds / paddle-image seconds; > 1 = paddle-image faster):"
    printf '  cold gzip vs tar|gzip|sha256sum:      %sx\n' "$(ratio "${SECS[$s.gzip]}" "${SECS[$s.pi_cold]}")"
    printf '  cold gzip vs tar|pigz|sha256sum:      %sx\n' "$(ratio "${SECS[$s.pigz]}" "${SECS[$s.pi_cold]}")"
    printf '  cold gzip vs umoci insert:            %sx\n' "$(ratio "${SECS[$s.umoci]}" "${SECS[$s.pi_cold]}")"
    printf '  cold zstd vs tar|zstd|sha256sum:      %sx\n' "$(ratio "${SECS[$s.zstd]}" "${SECS[$s.pi_zstd]}")"
    printf '  no-change rebuild as %% of cold build: %s%%\n' "$(pct "${SECS[$s.pi_rebuild]}" "${SECS[$s.pi_cold]}")"
    peak=$(printf '%s\n' "${RSS[$s.pi_cold]}" "${RSS[$s.pi_rebuild]}" "${RSS[$s.pi_zstd]}" | sort -n | tail -1)
    printf '  paddle-image peak RSS (max of 3 runs): %.1f MB\n' "$(awk -v k="$peak" 'BEGIN{print k/1024}')"
  done

  echo
  echo "goals:"
  local ok
  goal() { printf '  [%s] %s (%s)\n' "$( [[ $1 == 1 ]] && echo MET || echo MISSED )" "$2" "$3"; }
  ok=$(awk -v a="${SECS[whole.pigz]}" -v b="${SECS[whole.pi_cold]}" 'BEGIN{print (a > b) ? 1 : 0}')
  goal "$ok" "faster than tar|pigz|sha256sum on $threads cores, whole tree" "$(ratio "${SECS[whole.pigz]}" "${SECS[whole.pi_cold]}")x"
  ok=$(awk -v a="${SECS[whole.umoci]}" -v b="${SECS[whole.pi_cold]}" 'BEGIN{print (a > b) ? 1 : 0}')
  goal "$ok" "faster than umoci insert, whole tree" "$(ratio "${SECS[whole.umoci]}" "${SECS[whole.pi_cold]}")x"
  if [[ -n ${SECS[big.pigz]:-} ]]; then
    ok=$(awk -v a="${SECS[big.pigz]}" -v b="${SECS[big.pi_cold]}" 'BEGIN{print (a >= 2 * b) ? 1 : 0}')
    goal "$ok" "much faster (>= 2x) than tar|pigz|sha256sum on incompressible data" "$(ratio "${SECS[big.pigz]}" "${SECS[big.pi_cold]}")x"
  fi
  peak=$(for s in "${subsets[@]}"; do printf '%s\n' "${RSS[$s.pi_cold]}" "${RSS[$s.pi_rebuild]}" "${RSS[$s.pi_zstd]}"; done | sort -n | tail -1)
  ok=$(awk -v k="$peak" 'BEGIN{print (k < 100 * 1024) ? 1 : 0}')
  goal "$ok" "paddle-image peak RSS under 100 MB" "$(awk -v k="$peak" 'BEGIN{printf "%.1f MB", k/1024}')"
  ok=$(awk -v a="${SECS[whole.pi_rebuild]}" -v b="${SECS[whole.pi_cold]}" 'BEGIN{print (a <= 0.03 * b) ? 1 : 0}')
  goal "$ok" "no-change rebuild at most 3% of cold build (issue 35; 5% before), whole tree" "$(pct "${SECS[whole.pi_rebuild]}" "${SECS[whole.pi_cold]}")%"
  if [[ $smoke == 1 ]]; then
    echo "  (smoke run: timings this small are dominated by noise and start-up; use the full run for the goals)"
  fi
  if ((${#WARN[@]})); then
    echo; echo "warnings:"; printf '  %s\n' "${WARN[@]}"
  fi
}

report | tee "$work/last-results-$( [[ $smoke == 1 ]] && echo smoke || echo full ).txt"
rm -rf "$run"
exit 0
