#!/usr/bin/env bash
# Wheels from a package index: paddle-image lock + build vs Debian's pip, side by side.
#
#   bench/wheel_fetch.sh             default: one BENCH_BIG_MB (300) MiB wheel + 4 small ones
#   bench/wheel_fetch.sh --prepare   only generate the wheels (untimed)
#
# Environment:
#   BENCH_BIG_MB        MiB of stored random data in bigwheel-1.0 (default 300)
#   BENCH_FILE_HEADERS  1 = the index sends PyPI's Cache-Control for files, so pip's
#                       HTTP cache can answer without a request (default 1);
#                       0 = the test index as it is (no Cache-Control: pip downloads again)
#   PADDLE_IMAGE        binary to test (default build/cli/paddle-image)
#
# The index is tests/support/index_server.py on 127.0.0.1 with the wheels of
# tests/support/make-index-wheels.py. Wheels are generated once under bench/work/
# (gitignored). See bench/README.md for what is measured.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

prepare=0
for arg in "$@"; do
  case "$arg" in
    --prepare) prepare=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "wheel_fetch.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

big_mb=${BENCH_BIG_MB:-300}
file_headers=${BENCH_FILE_HEADERS:-1}
pi=${PADDLE_IMAGE:-$root/build/cli/paddle-image}
py=/usr/bin/python3

[[ -x $py ]] || { echo "wheel_fetch.sh: $py not found" >&2; exit 1; }
"$py" -m pip --version >/dev/null 2>&1 || { echo "wheel_fetch.sh: Debian's pip not found (apt-get install python3-pip)" >&2; exit 1; }
[[ -x $pi ]] || { echo "wheel_fetch.sh: $pi not found or not executable (build first, or set PADDLE_IMAGE)" >&2; exit 1; }

# Neither tool may see this machine's pip configuration (PIP_FIND_LINKS=/opt/wheels
# and friends): paddle-image reads PIP_* and pip.conf too.
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_NO_INDEX PIP_REQUIRE_HASHES PIP_TARGET PIP_CACHE_DIR PIP_NO_CACHE_DIR
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy

work=$root/bench/work
wheels=$work/wheel-fetch-wheels-${big_mb}mb
run=$work/wheel-fetch-run
mkdir -p "$work"

# ---------------------------------------------------------------------------
# 1. Wheels (generated once per size)
# ---------------------------------------------------------------------------
"$py" "$root/tests/support/make-index-wheels.py" "$wheels" --big-mb "$big_mb"
if [[ $prepare == 1 ]]; then
  echo "wheels ready: $wheels" >&2
  exit 0
fi

rm -rf "$run"
mkdir -p "$run"
# Snapshot the binary so a rebuild of build/ during the run can't change what is measured.
cp "$pi" "$run/paddle-image"
pi_src=$pi
pi_sum=$(sha256sum "$pi" | cut -c1-12)
pi_date=$(date -u -r "$pi" '+%Y-%m-%d %H:%M UTC')
pi=$run/paddle-image

# measure.py TIMEFILE CMD...: wall seconds, peak RSS (KB) of the largest process
# among CMD and its descendants (getrusage(RUSAGE_CHILDREN).ru_maxrss), user+sys
# CPU seconds of all of them, exit status, start time (epoch seconds).
cat >"$run/measure.py" <<'PY'
import resource, subprocess, sys, time
start = time.time()
t0 = time.monotonic()
rc = subprocess.call(sys.argv[2:])
t1 = time.monotonic()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write(f"{t1 - t0:.3f} {ru.ru_maxrss} {ru.ru_utime + ru.ru_stime:.2f} {rc} {start:.6f}\n")
sys.exit(rc)
PY

# The index: index_server.py as it is, or (BENCH_FILE_HEADERS=1) with the header
# files.pythonhosted.org sends on every file, so that pip's HTTP cache may keep them.
# Project pages keep the test server's "Cache-Control: max-age=0" (pip revalidates
# them, and the server has no 304, so each costs a full page).
cat >"$run/index.py" <<'PY'
import importlib.util, sys
path, headers = sys.argv[1], sys.argv[2] == "1"
spec = importlib.util.spec_from_file_location("index_server", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
if headers:
    end_headers = mod.Handler.end_headers
    def with_cache_control(self):
        p = self.path.split("?", 1)[0]
        if p.startswith("/files/") and not p.endswith(".metadata"):
            self.send_header("Cache-Control", "max-age=365000000, immutable, public")
        end_headers(self)
    mod.Handler.end_headers = with_cache_control
sys.argv = [path] + sys.argv[3:]
sys.exit(mod.main())
PY

log=$run/access.log
: >"$log"
server_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [[ -n $server_pid ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  # the bulky outputs; logs, lock, spec and timings stay in $run
  rm -rf "$run"/pip-dl "$run"/pip-target-* "$run"/pip-cache* "$run"/pi-cache "$run"/pi-out-* "$run"/pi-lock-cache "$run/paddle-image"
}
trap cleanup EXIT

"$py" "$run/index.py" "$root/tests/support/index_server.py" "$file_headers" \
  --root "$wheels" --port-file "$run/port" --log "$log" 2>"$run/index.stderr" &
server_pid=$!
for ((i = 0; i < 300; i++)); do
  [[ -s $run/port ]] && break
  kill -0 "$server_pid" 2>/dev/null || { echo "wheel_fetch.sh: index server died: $(cat "$run/index.stderr")" >&2; exit 1; }
  sleep 0.1
done
[[ -s $run/port ]] || { echo "wheel_fetch.sh: index server did not start" >&2; exit 1; }
port=$(cat "$run/port")
host=127.0.0.1:$port
index=http://$host/simple

# Requirements: four small wheels (one of them a cp311 manylinux wheel, one with a
# dependency) and the big one. The lock is written by paddle-image (untimed for the
# ratios) and used by both tools.
printf '%s\n' alpha==1.1 beta==2.0 gamma==0.5 fastmath==1.0 bigwheel==1.0 >"$run/requirements.txt"
cat >"$run/spec.yaml" <<EOF
base: scratch
python: {version: "3.11", glibc: "2.36"}
layers:
  - name: deps
    wheels:
      lock: requirements.lock
      index: $index
EOF

declare -A SECS RSS CPU REQ PAGES FILES BYTES SRVCPU START
server_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
hz=$(getconf CLK_TCK)

# timed KEY CMD...: run CMD under measure.py; record wall seconds, peak RSS, CPU,
# the index requests it made (from the access log: pages = /simple/ and .metadata,
# files = wheels), the bytes the index sent and the index server's own CPU seconds.
timed() {
  local key=$1; shift
  local lines0 ticks0 secs kb cpu start
  sync   # don't let an earlier run's dirty pages be written back inside this one
  lines0=$(wc -l <"$log")
  ticks0=$(server_ticks)
  if ! "$py" "$run/measure.py" "$run/$key.time" "$@" >"$run/$key.out" 2>"$run/$key.err"; then
    echo "wheel_fetch.sh: '$key' failed: $*" >&2
    tail -n 30 "$run/$key.out" "$run/$key.err" >&2
    exit 1
  fi
  sleep 0.2   # the server logs a request after its last byte is sent
  read -r secs kb cpu _ start <"$run/$key.time"
  SECS[$key]=$secs RSS[$key]=$kb CPU[$key]=$cpu START[$key]=$start
  SRVCPU[$key]=$(awk -v a="$ticks0" -v b="$(server_ticks)" -v hz="$hz" 'BEGIN{printf "%.2f", (b - a) / hz}')
  tail -n +"$((lines0 + 1))" "$log" >"$run/$key.access.log"
  read -r "REQ[$key]" "PAGES[$key]" "FILES[$key]" "BYTES[$key]" < <(awk '
    { n++; b += $4; if ($2 ~ /^\/files\// && $2 !~ /\.metadata$/) f++; else p++ }
    END { print n + 0, p + 0, f + 0, b + 0 }' "$run/$key.access.log")
  printf '  %-16s %8.2f s %8.1f MB RSS  cpu %6.2f s  %3d requests  %9.1f MB from the index\n' "$key" \
    "$secs" "$(awk -v k="$kb" 'BEGIN{print k/1024}')" "$cpu" "${REQ[$key]}" \
    "$(awk -v b="${BYTES[$key]}" 'BEGIN{print b/1048576}')" >&2
}

pip_common=(--no-deps --require-hashes -r "$run/requirements.lock" -i "$index" --trusted-host 127.0.0.1
  --progress-bar off --disable-pip-version-check)
# shellcheck disable=SC2016  # expanded by the inner bash
stamp_lines=(bash -c 'set -o pipefail; "$@" 2>&1 | while IFS= read -r l; do printf "%s %s\n" "$EPOCHREALTIME" "$l"; done' _)

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
own_ticks() { awk '{print $14+$15+$16+$17}' /proc/$$/stat; }
busy_start=$(busy_ticks); own_start=$(own_ticks); srv_start=$(server_ticks); wall_start=$(date +%s.%N)

echo "warm-up read of the wheels" >&2
cat "$wheels"/*.whl >/dev/null

echo "[lock]" >&2
timed pi_lock "$pi" lock "$run/requirements.txt" -o "$run/requirements.lock" --spec "$run/spec.yaml" --layer deps \
  --insecure-registry "$host" --cache-dir "$run/pi-lock-cache"

echo "[1. cold]" >&2
timed pip_download "$py" -m pip download "${pip_common[@]}" -d "$run/pip-dl" --cache-dir "$run/pip-cache-dl"
timed pi_cold "${stamp_lines[@]}" "$pi" build "$run/spec.yaml" --insecure-registry "$host" --cache-dir "$run/pi-cache" \
  -o "oci:$run/pi-out-cold:t" --metadata-file "$run/pi_cold.json"
timed pip_install "$py" -m pip install "${pip_common[@]}" --target "$run/pip-target-cold" --cache-dir "$run/pip-cache" \
  --no-compile --root-user-action=ignore

echo "[2. warm]" >&2
timed pip_install_warm "$py" -m pip install "${pip_common[@]}" --target "$run/pip-target-warm" --cache-dir "$run/pip-cache" \
  --no-compile --root-user-action=ignore
timed pi_warm "$pi" build "$run/spec.yaml" --insecure-registry "$host" --cache-dir "$run/pi-cache" \
  -o "oci:$run/pi-out-warm:t" --metadata-file "$run/pi_warm.json"
# extra: pip's install step alone, from the wheels pip download saved (no index at all)
timed pip_local "$py" -m pip install --no-deps --require-hashes -r "$run/requirements.lock" --no-index \
  --find-links "$run/pip-dl" --progress-bar off --target "$run/pip-target-local" --no-cache-dir \
  --no-compile --root-user-action=ignore

busy_end=$(busy_ticks); own_end=$(own_ticks); srv_end=$(server_ticks); wall_end=$(date +%s.%N)
# the index server is this script's child but still running: its ticks are not in own_ticks
other_cpu=$(awk -v b=$((busy_end - busy_start)) -v o=$((own_end - own_start)) -v s=$((srv_end - srv_start)) -v hz="$hz" \
  'BEGIN{x = (b - o - s) / hz; if (x < 0) x = 0; printf "%.1f", x}')
wall=$(awk -v a="$wall_start" -v b="$wall_end" 'BEGIN{printf "%.0f", b - a}')

# ---------------------------------------------------------------------------
# 2. Checks (untimed)
# ---------------------------------------------------------------------------
WARN=()
big_bytes=$(stat -c %s "$wheels/bigwheel-1.0-py3-none-any.whl")
wheel_bytes=0
for w in alpha-1.1-py3-none-any beta-2.0-py3-none-any gamma-0.5-py3-none-any \
  fastmath-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64 bigwheel-1.0-py3-none-any; do
  wheel_bytes=$((wheel_bytes + $(stat -c %s "$wheels/$w.whl")))
done
layer_info() { # METADATA -> "status wheels size media_type"
  "$py" -c 'import json,sys
m = json.load(open(sys.argv[1])); l = m["layers"][0]
print(l["status"], len(m["wheels"]), l["size"], l["media_type"].rsplit("+", 1)[-1])' "$1"
}
read -r st_cold n_cold size_cold comp <<<"$(layer_info "$run/pi_cold.json")"
read -r st_warm n_warm _ _ <<<"$(layer_info "$run/pi_warm.json")"
[[ $st_cold != reused && $n_cold == 5 ]] || WARN+=("paddle-image cold build: layer status '$st_cold', $n_cold wheels (expected a new layer, 5)")
[[ $st_warm == reused && $n_warm == 5 ]] || WARN+=("paddle-image warm build: layer status '$st_warm', $n_warm wheels (expected reused, 5)")
((REQ[pi_warm] == 0)) || WARN+=("paddle-image warm build sent ${REQ[pi_warm]} request(s) to the index (expected none)")
for t in pip-target-cold pip-target-warm pip-target-local; do
  s=$(stat -c %s "$run/$t/bigwheel/blob.bin" 2>/dev/null || echo 0)
  ((s == big_mb * 1048576)) || WARN+=("$t: bigwheel/blob.bin is $s bytes (expected $((big_mb * 1048576)))")
done
n_dl=$(find "$run/pip-dl" -name '*.whl' | wc -l)
((n_dl == 5)) || WARN+=("pip download saved $n_dl wheels (expected 5)")
if [[ $file_headers == 1 ]] && ((FILES[pip_install_warm] != 0)); then
  WARN+=("pip's warm install downloaded ${FILES[pip_install_warm]} file(s) again despite the Cache-Control header")
fi

# Where paddle-image's cold build spends its time, from its time-stamped log:
# until "wheels: N downloaded" = start-up + index pages + downloads (hashed as they stream);
# until the layer's "built sha256:" line = install into the staging tree + tar + compress + hash;
# after it = config, manifest, index.json of the output layout.
pi_phases=$(awk -v t0="${START[pi_cold]}" -v t1="$(awk -v a="${START[pi_cold]}" -v s="${SECS[pi_cold]}" 'BEGIN{printf "%.6f", a + s}')" '
  / wheels: [0-9]+ downloaded/ && !f { f = $1 }
  $2 == "built" && / entries\)$/ && !l { l = $1 }
  END {
    if (!f || !l) { print "(log lines not found)"; exit }
    printf "fetch + verify %.2f s, install + layer (tar, %s, hash) %.2f s, output %.2f s", f - t0, comp, l - f, t1 - l
  }' comp="$comp" "$run/pi_cold.out")

# ---------------------------------------------------------------------------
# 3. Report
# ---------------------------------------------------------------------------
mb() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1048576}'; }
mb3() { awk -v b="$1" 'BEGIN{printf "%.3f", b/1048576}'; }
rssmb() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b <= 0) b = 0.005; printf "%.2f", a/b }'; }

names=(pi_lock pip_download pip_install pi_cold pip_install_warm pi_warm pip_local)
declare -A LABEL=(
  [pi_lock]="paddle-image lock (shared, once)"
  [pip_download]="pip download (fresh cache)"
  [pip_install]="pip install --target (fresh cache)"
  [pi_cold]="paddle-image build (fresh cache)"
  [pip_install_warm]="pip install --target (warm cache)"
  [pi_warm]="paddle-image build (same cache)"
  [pip_local]="pip install --no-index (local wheels)"
)

report() {
  echo
  echo "paddle-image wheels-from-an-index benchmark: paddle-image lock + build vs pip"
  echo "  host:  $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/{print $2}') GB RAM, $(df --output=fstype "$run" | tail -1) at $run"
  echo "  load:  $load_start at start (1/5/15-min load average)"
  echo "  other: ${other_cpu} CPU-seconds used by other processes during the ${wall} s run (the index server's own CPU excluded; a few seconds is kernel writeback and noise)"
  echo "  paddle-image: $pi_src (version $("$pi" --version 2>/dev/null | head -1), built $pi_date, sha256 $pi_sum...)"
  echo "  pip:   $("$py" -m pip --version | awk '{print $1, $2}') (Debian python3-pip), $("$py" --version)"
  echo "  index: tests/support/index_server.py on $host (Python, one thread per connection), $( [[ $file_headers == 1 ]] && echo "files sent with PyPI's Cache-Control: max-age=365000000, immutable" || echo "no Cache-Control on files (pip's HTTP cache cannot answer for them)")"
  echo "  lock:  5 wheels, $(mb "$wheel_bytes") MB: bigwheel-1.0 ($(mb "$big_bytes") MB, ${big_mb} MiB of stored random data) + alpha, beta, gamma, fastmath (cp311 manylinux)"
  echo "  target: CPython 3.11, glibc 2.36, x86_64; paddle-image builds one wheels layer on scratch ($comp, $(mb "$size_cold") MB)"
  echo
  printf '%-38s %8s %7s %8s %5s %5s %9s %7s\n' run seconds "CPU s" "RSS MB" pages files "index MB" "idx CPU"
  local n
  for n in "${names[@]}"; do
    [[ $n == pip_download || $n == pip_install_warm || $n == pip_local ]] && echo
    printf '%-38s %8.2f %7.2f %8.1f %5d %5d %9.1f %7.2f\n' "${LABEL[$n]}" "${SECS[$n]}" "${CPU[$n]}" "$(rssmb "${RSS[$n]}")" \
      "${PAGES[$n]}" "${FILES[$n]}" "$(mb "${BYTES[$n]}")" "${SRVCPU[$n]}"
  done
  echo "  (seconds: wall; CPU: user+sys of the tool and its children; RSS: peak of the largest single process"
  echo "   (getrusage RUSAGE_CHILDREN); pages: index pages and .metadata requests; files: wheel downloads;"
  echo "   index MB: response bytes from the access log; idx CPU: the index server's CPU during the run)"
  echo
  echo "scenario                                        pip s  paddle-image s     ratio  (pip / paddle-image; > 1 = paddle-image faster)"
  row() { printf '%-44s %8.2f %15.2f %8sx\n' "$1" "${SECS[$2]}" "${SECS[$3]}" "$(ratio "${SECS[$2]}" "${SECS[$3]}")"; }
  row "1a cold: pip download vs build" pip_download pi_cold
  row "1b cold: pip install --target vs build" pip_install pi_cold
  row "2  warm: pip install (cache) vs 2nd build" pip_install_warm pi_warm
  echo "  like for like: 1b. Both end with the locked wheels fetched, hash-checked and installed; paddle-image"
  echo "  also tars, compresses and hashes the installed tree into a layer and writes an OCI layout."
  echo "  1a is pip's fetch and hash check alone: a lower bound for what pip needs before it can install."
  echo
  echo "requests and bytes from the index (requests: pages+files):"
  printf '  %-44s %7s %11s   %7s %11s\n' "" "pip" "MB" "p-i" "MB"
  brow() { printf '  %-44s %7s %11.3f   %7s %11.3f\n' "$1" "${PAGES[$2]}+${FILES[$2]}" "$(mb3 "${BYTES[$2]}")" \
    "${PAGES[$3]}+${FILES[$3]}" "$(mb3 "${BYTES[$3]}")"; }
  brow "1a cold: pip download vs build" pip_download pi_cold
  brow "1b cold: pip install --target vs build" pip_install pi_cold
  brow "2  warm: pip install (cache) vs 2nd build" pip_install_warm pi_warm
  printf '  paddle-image lock (once): %s requests (%s pages/metadata, %s files), %s KB\n' "${REQ[pi_lock]}" "${PAGES[pi_lock]}" \
    "${FILES[pi_lock]}" "$(awk -v b="${BYTES[pi_lock]}" 'BEGIN{printf "%.1f", b/1024}')"
  echo
  echo "peak RSS: pip download $(rssmb "${RSS[pip_download]}") MB, pip install $(rssmb "${RSS[pip_install]}") MB (warm $(rssmb "${RSS[pip_install_warm]}") MB);" \
    "paddle-image build $(rssmb "${RSS[pi_cold]}") MB (warm $(rssmb "${RSS[pi_warm]}") MB), lock $(rssmb "${RSS[pi_lock]}") MB"
  echo "paddle-image cold build: $pi_phases (from its time-stamped log)"
  echo "pip's install step alone (wheels on disk, no index): $(printf '%.2f' "${SECS[pip_local]}") s"
  if ((${#WARN[@]})); then
    echo; echo "warnings:"; printf '  %s\n' "${WARN[@]}"
  fi
}

report | tee "$work/last-results-wheel-fetch-${big_mb}mb.txt"
exit 0
