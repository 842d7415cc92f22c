#!/usr/bin/env bash
# Resolving a Paddle application's closure: paddle-image lock vs Debian's pip, side by side.
#
#   bench/resolve.sh             default: 80 packages x 6 versions, 60 forced backtracks
#   bench/resolve.sh --prepare   only generate the indexes (untimed)
#
# Environment:
#   BENCH_PACKAGES    packages in the generated closure (default 80)
#   BENCH_VERSIONS    versions of each (default 6)
#   BENCH_BACKTRACKS  versions of the top package the backtracking case must step back over (default 60)
#   ROUNDS            runs of each timed command; the median is reported (default 3)
#   PADDLE_IMAGE      binary to test (default build/cli/paddle-image)
#
# The indexes are tests/support/make-resolve-index.py's `app` closures, served as PEP 503
# HTML with PEP 658 metadata files by tests/support/index_server.py on 127.0.0.1 (both
# tools read the same pages: Debian's pip 23.0 cannot read the PEP 691 JSON form of a
# PEP 714 index). Generated once under bench/work/ (gitignored). What is measured and
# why: bench/README.md, "Resolving requirements".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

prepare=0
for arg in "$@"; do
  case "$arg" in
    --prepare) prepare=1 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "resolve.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

packages=${BENCH_PACKAGES:-80}
versions=${BENCH_VERSIONS:-6}
backtracks=${BENCH_BACKTRACKS:-60}
rounds=${ROUNDS:-3}
for v in "$packages" "$versions" "$backtracks" "$rounds"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "resolve.sh: BENCH_PACKAGES, BENCH_VERSIONS, BENCH_BACKTRACKS and ROUNDS must be positive integers" >&2; exit 2; }
done
pi=${PADDLE_IMAGE:-$root/build/cli/paddle-image}
py=/usr/bin/python3
[[ -x $py ]] || { echo "resolve.sh: $py not found" >&2; exit 1; }
"$py" -m pip --version >/dev/null 2>&1 || { echo "resolve.sh: Debian's pip not found (apt-get install python3-pip)" >&2; exit 1; }
[[ -x $pi ]] || { echo "resolve.sh: $pi not found or not executable (build first, or set PADDLE_IMAGE)" >&2; exit 1; }

# Neither tool may see this machine's pip configuration: paddle-image reads PIP_* and pip.conf too.
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_NO_INDEX PIP_REQUIRE_HASHES PIP_TARGET PIP_CACHE_DIR PIP_NO_CACHE_DIR
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy

work=$root/bench/work
plain=$work/resolve-app-$packages-$versions
backtrack=$work/resolve-app-$packages-$versions-b$backtracks
mkdir -p "$work"
"$py" "$root/tests/support/make-resolve-index.py" "$plain" app --packages "$packages" --versions "$versions"
"$py" "$root/tests/support/make-resolve-index.py" "$backtrack" app --packages "$packages" --versions "$versions" \
  --backtracks "$backtracks"
if [[ $prepare == 1 ]]; then
  echo "indexes ready: $plain $backtrack" >&2
  exit 0
fi

run=$work/resolve-run
rm -rf "$run"
mkdir -p "$run"
cp "$pi" "$run/paddle-image" # a rebuild of build/ during the run cannot change what is measured
pi_sum=$(sha256sum "$pi" | cut -c1-12)
pi=$run/paddle-image
cd "$run"

servers=()
cleanup() { for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
serve() { # serve NAME DIR -> URL_NAME
  "$py" "$root/tests/support/index_server.py" --root "$2" --port-file "$1.port" --log "$1.log" --no-json 2>"$1.err" &
  servers+=($!)
  for _ in $(seq 100); do [[ -s $1.port ]] && break; sleep 0.1; done
  [[ -s $1.port ]] || { echo "resolve.sh: the index server for $2 did not start" >&2; cat "$1.err" >&2; exit 1; }
  printf -v "URL_$1" 'http://127.0.0.1:%s/simple/' "$(cat "$1.port")"
}
serve plain "$plain"
serve back "$backtrack"

echo 'paddleapp' >app.in
printf 'python: {version: "3.11", glibc: "2.36"}\nlayers:\n  - name: deps\n    wheels: {lock: app.lock}\n' >spec.yaml

# measure OUT CMD...: wall seconds, peak RSS (KB) of the largest process, exit status.
cat >measure.py <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
rc = subprocess.call(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1] + ".err", "w"))
t1 = time.monotonic()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "a") as f:
    f.write(f"{t1 - t0:.3f} {ru.ru_maxrss} {rc}\n")
PY
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

pip_resolve() { # pip_resolve URL CACHE
  "$py" -m pip install --dry-run --report - --ignore-installed --only-binary :all: --python-version 3.11 \
    --implementation cp --abi cp311 --platform manylinux_2_36_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --target "$run/pip-target" --index-url "$1" --cache-dir "$2" --quiet \
    -r app.in
}
export -f pip_resolve
export py run

# timed NAME SETUP CMD...: ROUNDS runs of CMD, SETUP (a shell line, untimed) before each.
timed() {
  local name=$1 setup=$2
  shift 2
  rm -f "t.$name"
  for _ in $(seq "$rounds"); do
    bash -c "$setup"
    sync
    "$py" measure.py "t.$name" "$@"
    if [[ $(tail -1 "t.$name" | cut -d' ' -f3) != 0 ]]; then
      echo "resolve.sh: $name failed:" >&2
      cat "t.$name.err" >&2
      exit 1
    fi
  done
  printf '%-44s %8.3f s  %7d KB peak RSS\n' "$name" "$(cut -d' ' -f1 "t.$name" | median)" \
    "$(cut -d' ' -f2 "t.$name" | median)"
}
secs() { cut -d' ' -f1 "t.$1" | median; }
rss() { cut -d' ' -f2 "t.$1" | sort -n | tail -1; }

echo "resolve.sh: $packages packages x $versions versions ($(grep -c . <(find "$plain" -name '*.whl')) wheels), $backtracks backtracks, $rounds rounds"
echo "paddle-image $pi_sum; $("$py" -m pip --version | cut -d' ' -f1-2); load $(cut -d' ' -f1-3 /proc/loadavg)"
# pip warm: its HTTP cache filled by one untimed run (pages revalidated, metadata files
# answered from the cache); paddle-image warm: its metadata cache filled likewise, the
# output lock removed so nothing is kept from it.
pip_resolve "$URL_plain" "$run/pipcache" >/dev/null
timed "pip warm" ":" bash -c 'pip_resolve "$0" "$run/pipcache"' "$URL_plain"
timed "pip cold" "rm -rf $run/pipcold" bash -c 'pip_resolve "$0" "$run/pipcold"' "$URL_plain"
lock=("$pi" lock app.in --spec spec.yaml -q -o app.lock)
"${lock[@]}" --cache-dir "$run/pi-warm" -i "$URL_plain" >/dev/null
timed "paddle-image lock warm" "rm -f $run/app.lock" "${lock[@]}" --cache-dir "$run/pi-warm" -i "$URL_plain"
timed "paddle-image lock cold" "rm -rf $run/app.lock $run/pi-cold" "${lock[@]}" --cache-dir "$run/pi-cold" \
  -i "$URL_plain"
"$py" - app.lock "$packages" <<'PY'
import sys
n = sum(1 for l in open(sys.argv[1]) if l[:1].isalnum())
want = int(sys.argv[2]) + 1
if n != want:
    sys.exit(f"resolve.sh: the lock holds {n} packages, not {want}")
PY
"${lock[@]}" --cache-dir "$run/pi-back" -i "$URL_back" -U >/dev/null
timed "paddle-image lock warm, $backtracks backtracks" "rm -f $run/app.lock" "${lock[@]}" \
  --cache-dir "$run/pi-back" -i "$URL_back"
grep -q '^paddleapp==1.0 ' app.lock || { echo "resolve.sh: the backtracking case did not end at paddleapp 1.0" >&2; exit 1; }
"$pi" lock app.in --spec spec.yaml -q -o back.lock --json --cache-dir "$run/pi-back" -i "$URL_back" >back.json
"$py" - back.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["resolution"]
print(f"  (the backtracking case: {r['decisions']} decisions, {r['conflicts']} conflicts)")
PY
pip_resolve "$URL_back" "$run/pipback" >/dev/null
timed "pip warm, $backtracks backtracks" ":" bash -c 'pip_resolve "$0" "$run/pipback"' "$URL_back"

echo
echo "ratios (> 1 = paddle-image faster):"
"$py" - "$(secs 'pip warm')" "$(secs 'pip cold')" "$(secs 'paddle-image lock warm')" "$(secs 'paddle-image lock cold')" \
  "$(secs "paddle-image lock warm, $backtracks backtracks")" "$(secs "pip warm, $backtracks backtracks")" \
  "$(rss 'paddle-image lock warm')" "$(rss 'paddle-image lock cold')" "$(rss "paddle-image lock warm, $backtracks backtracks")" \
  "$backtracks" <<'PY'
import sys
pw, pc, iw, ic, ib, pb = map(float, sys.argv[1:7])
peak = max(map(int, sys.argv[7:10])) / 1024
bt = sys.argv[10]
print(f"  pip warm / paddle-image warm               {pw / iw:7.2f}x   (goal >= 5)")
print(f"  pip cold / paddle-image cold               {pc / ic:7.2f}x")
print(f"  paddle-image cold / pip warm               {ic / pw:7.2f}    (goal <= 1.5)")
print(f"  pip warm / paddle-image warm, {bt} backtracks {pb / ib:7.2f}x")
print(f"  backtracking / plain, paddle-image warm    {ib / iw:7.2f}    (goal < 10)")
print(f"  paddle-image peak RSS                      {peak:7.1f} MB (goal < 60)")
goals = [("warm >= 5x pip warm", pw / iw >= 5), ("cold within 1.5x of pip warm", ic / pw <= 1.5),
         ("backtracking < 10x plain", ib / iw < 10), ("peak RSS < 60 MB", peak < 60)]
for name, ok in goals:
    print(f"{'MET' if ok else 'MISSED'}: {name}")
PY
