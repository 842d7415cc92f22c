#!/usr/bin/env bash
# Old binary against new, side by side: the commands the benchmarks time (build cold
# and unchanged, archive output, push, pull, and the copies between layouts,
# docker-archives and a registry), each run ROUNDS times, old and new interleaved,
# against a local docker-registry. Prints the median seconds of each, the ratio
# new/old, and whether new is within 5% of old (or faster).
#
#   bench/compare.sh OLD_BINARY [NEW_BINARY]     (NEW defaults to build/cli/paddle-image)
#
# Environment:
#   ROUNDS          runs of each command per binary (default 5)
#   BENCH_SMALL     small files in the tree          (default 5000)
#   BENCH_BIG_MB    MB of random data in two files   (default 2 x 100)
#   BENCH_WORK      work directory (default bench/work/compare; removed at the start)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
old=${1:?usage: bench/compare.sh OLD_BINARY [NEW_BINARY]}
new=${2:-$root/build/cli/paddle-image}
rounds=${ROUNDS:-5}
small=${BENCH_SMALL:-5000}
big_mb=${BENCH_BIG_MB:-100}
work=${BENCH_WORK:-$here/work/compare}
for b in "$old" "$new"; do
  [[ -x $b ]] || { echo "compare.sh: $b is not an executable" >&2; exit 2; }
done
for v in "$rounds" "$small" "$big_mb"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: ROUNDS, BENCH_SMALL and BENCH_BIG_MB must be positive integers" >&2; exit 2; }
done

rm -rf "$work"
mkdir -p "$work/bin" "$work/tree/src" "$work/tree/models"
# Snapshots, so a rebuild of build/ during the run cannot change what is measured.
cp "$old" "$work/bin/old"
cp "$new" "$work/bin/new"
source "$root/tests/support/registry/registry.sh"
trap registry_stop_all EXIT
cd "$work"

echo "generating the tree ($small small files, 2 x $big_mb MB random) ..." >&2
/usr/bin/python3 - "$small" <<'PY'
import os, random, sys
random.seed(7)
words = "import paddle model train loss step batch optimizer config data layer tensor".split()
for i in range(int(sys.argv[1])):
    d = f"tree/src/m{i // 625:02d}/p{i // 25 % 25:02d}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{i:05d}.py", "w") as f:
        f.write(" ".join(random.choice(words) for _ in range(random.randint(30, 900))) + "\n")
PY
for i in 1 2; do head -c "$((big_mb * 1048576))" /dev/urandom >"tree/models/w$i.bin"; done
cat >tree/spec.yaml <<'YAML'
image: {name: bench/compare, tags: [v1]}
layers:
  - name: models
    data: [{from: models/, to: /opt/models/}]
  - name: code
    files: [{from: src/, to: /app/}]
YAML
tar -cf - -C tree . | cat >/dev/null # warm the page cache

registry_start bench open "$work/reg"
R=$BENCH_HOST
declare -A T # T[name.bin] = "s1 s2 ..."

timed() { # NAME BIN CMD...
  local name=$1 bin=$2; shift 2
  sync
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$work/err.txt" || { echo "compare.sh: $name ($bin) failed: $(head -3 "$work/err.txt")" >&2; exit 1; }
  t1=$(date +%s.%N)
  T[$name.$bin]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}') "
}

names=(build_cold build_unchanged build_archive push pull copy_archive_to_layout copy_layout_to_archive copy_registry_to_archive)
for ((r = 1; r <= rounds; r++)); do
  echo "[round $r/$rounds]" >&2
  for bin in old new; do
    [[ $(( r % 2 )) == 1 ]] || bin=$([[ $bin == old ]] && echo new || echo old) # alternate who goes first
    P="$work/bin/$bin"
    d="$work/r$r-$bin"
    rm -rf "$d"; mkdir -p "$d"
    timed build_cold "$bin" "$P" build tree/spec.yaml -q -j 2 --cache-dir "$d/cache" -o "oci:$d/lay"
    timed build_unchanged "$bin" "$P" build tree/spec.yaml -q -j 2 --cache-dir "$d/cache" -o "oci:$d/lay2"
    timed build_archive "$bin" "$P" build tree/spec.yaml -q -j 2 --cache-dir "$d/cache" -o "docker-archive:$d/img.tar"
    timed push "$bin" "$P" push "oci:$d/lay:v1" "$R/$bin$r/app:v1" --insecure -q
    timed pull "$bin" "$P" pull "$R/$bin$r/app:v1" -o "oci:$d/pulled" --insecure -q
    timed copy_archive_to_layout "$bin" "$P" copy "docker-archive:$d/img.tar" "oci:$d/fromarch:v1" -q
    timed copy_layout_to_archive "$bin" "$P" copy "oci:$d/lay:v1" "docker-archive:$d/copy.tar" -q
    timed copy_registry_to_archive "$bin" "$P" pull "$R/$bin$r/app:v1" -o "docker-archive:$d/pulled.tar" --insecure -q
    rm -rf "$d"
  done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END{print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo
echo "paddle-image old vs new: median of $rounds interleaved runs each"
echo "  host:  $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "  old:   $old ($(sha256sum "$work/bin/old" | cut -c1-12))"
echo "  new:   $new ($(sha256sum "$work/bin/new" | cut -c1-12))"
echo "  tree:  $small small files + 2 x $big_mb MB random data; registry: docker-registry on 127.0.0.1"
echo
printf '%-28s %10s %10s %8s  %s\n' command "old s" "new s" new/old verdict
worse=0
for n in "${names[@]}"; do
  o=$(median <<<"${T[$n.old]}")
  w=$(median <<<"${T[$n.new]}")
  ratio=$(awk -v a="$w" -v b="$o" 'BEGIN{ if (b <= 0) b = 0.001; printf "%.2f", a / b }')
  verdict=$(awk -v q="$ratio" 'BEGIN{ print (q <= 1.05) ? "ok" : "SLOWER" }')
  [[ $verdict == ok ]] || worse=1
  printf '%-28s %10.3f %10.3f %8s  %s\n' "$n" "$o" "$w" "$ratio" "$verdict"
done
exit $worse
