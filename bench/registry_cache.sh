#!/usr/bin/env bash
# The registry cache's cost and gain, side by side in one run (issue 37): a cold build
# with and without --cache-to (to a local layout, and with --push), a no-change rebuild
# with and without the registry cache set, and a fresh runner (an empty local cache)
# with --cache-from against a cold build;
# each ROUNDS times, interleaved, against a local docker-registry. Prints the median
# seconds and peak RSS of each and the ratios.
#
#   bench/registry_cache.sh [BINARY]      (default build/cli/paddle-image)
#
# Environment:
#   ROUNDS          runs of each case (default 5)
#   BENCH_SMALL     small files in the tree          (default 5000)
#   BENCH_BIG_MB    MB of random data in each of two files (default 100)
#   BENCH_WORK      work directory (default bench/work/registry-cache; removed at the start)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
pi=${1:-$root/build/cli/paddle-image}
rounds=${ROUNDS:-5}
small=${BENCH_SMALL:-5000}
big_mb=${BENCH_BIG_MB:-100}
work=${BENCH_WORK:-$here/work/registry-cache}
[[ -x $pi ]] || { echo "registry_cache.sh: $pi is not an executable" >&2; exit 2; }
for v in "$rounds" "$small" "$big_mb"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "registry_cache.sh: ROUNDS, BENCH_SMALL and BENCH_BIG_MB must be positive integers" >&2; exit 2; }
done
# shellcheck source=../tests/support/registry/registry.sh
source "$root/tests/support/registry/registry.sh"
rm -rf "$work"
mkdir -p "$work/tree/src" "$work/tree/models"
trap registry_stop_all EXIT
registry_start reg open "$work/srv" >/dev/null

# The tree: BENCH_SMALL small text files (code) and two random model files.
/usr/bin/python3 - "$work/tree/src" "$small" <<'PY'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
for i in range(n):
    sub = os.path.join(d, f"pkg{i % 50}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"m{i}.py"), "w") as f:
        f.write("".join(f"def f{j}(x):\n    return x * {rnd.randint(0, 999)}\n" for j in range(20)))
PY
for i in 1 2; do head -c $((big_mb * 1048576)) /dev/urandom >"$work/tree/models/w$i.bin"; done
cat >"$work/tree/spec.yaml" <<'YAML'
image: {name: bench.local/rc/app, tags: [v1]}
base: scratch
layers:
  - name: models
    data: [{from: models/, to: /opt/models/}]
  - name: code
    files: [{from: src/, to: /app/}]
YAML

C=$REG_HOST/rc/app/cache
declare -A SEC RSS
# run NAME CACHE_DIR ARGS...: one timed build; appends its seconds and peak RSS (MB).
run() {
  local name=$1 cache=$2
  shift 2
  local t
  /usr/bin/time -o "$work/time" -f '%e %M' "$pi" build "$work/tree/spec.yaml" -q --revision r --cache-dir "$cache" \
    "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  t=$(tail -1 "$work/time")
  SEC[$name]+="${t% *} "
  RSS[$name]+="$(awk -v k="${t#* }" 'BEGIN { printf "%.1f", k / 1024 }') "
}
# Each round writes to repositories of its own, so its cold cases upload everything
# (distribution links blobs per repository; a repository of an earlier round would
# answer "already there").
for ((r = 1; r <= rounds; r++)); do
  rm -rf "$work"/c-* "$work"/out
  C=$REG_HOST/rc/r$r/cache
  run cold "$work/c-plain" -o "oci:$work/out:a"
  run cold_cache_to "$work/c-to" -o "oci:$work/out:b" --cache-to "$C"
  run rebuild "$work/c-plain" -o "oci:$work/out:a"
  run rebuild_cache "$work/c-to" -o "oci:$work/out:b" --cache-from "$C" --cache-to "$C"
  run fresh_runner_push "$work/c-fresh" --push "$REG_HOST/rc/r$r/app:1" --cache-from "$C"
  rm -rf "$work/c-fresh"
  run cold_push "$work/c-fresh" --push "$REG_HOST/rc/r$r/other:1"
  rm -rf "$work/c-fresh"
  run cold_push_cache_to "$work/c-fresh" --push "$REG_HOST/rc/r$r/third:1" --cache-to "$REG_HOST/rc/r$r/cache2"
  rm -rf "$work/c-fresh"
  run fresh_runner_local "$work/c-fresh" -o "oci:$work/out:c" --cache-from "$C"
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-22s %10s %14s\n' case "median s" "median RSS MB"
for n in cold cold_cache_to rebuild rebuild_cache cold_push cold_push_cache_to fresh_runner_push fresh_runner_local; do
  printf '%-22s %10s %14s\n' "$n" "$(median <<<"${SEC[$n]}")" "$(median <<<"${RSS[$n]}")"
done
ratio() { awk -v a="$(median <<<"${SEC[$1]}")" -v b="$(median <<<"${SEC[$2]}")" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo
echo "cold with --cache-to / without:                 $(ratio cold_cache_to cold)x"
echo "no-change rebuild with the registry cache / without: $(ratio rebuild_cache rebuild)x"
echo "cold build and push with --cache-to / without:  $(ratio cold_push_cache_to cold_push)x"
echo "fresh runner, push, / cold build and push:      $(ratio fresh_runner_push cold_push)x"
echo "fresh runner, local output, / cold build:       $(ratio fresh_runner_local cold)x"
rss() { awk -v a="$(median <<<"${RSS[$1]}")" -v b="$(median <<<"${RSS[$2]}")" 'BEGIN { printf "%+.1f MB", a - b }'; }
echo "peak RSS with the registry cache - without: cold $(rss cold_cache_to cold), no-change rebuild $(rss rebuild_cache rebuild),"
echo "  cold build and push $(rss cold_push_cache_to cold_push), fresh runner push vs cold push $(rss fresh_runner_push cold_push)"
echo "(machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
