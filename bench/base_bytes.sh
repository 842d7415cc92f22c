#!/usr/bin/env bash
# Base bytes: what a build on a big Paddle-shaped base reads from the registry and keeps.
#
#   bench/base_bytes.sh [BINARY]          (default build/cli/paddle-image)
#
# Generates the Paddle-shaped test base (tests/support/make-paddle-base.py, on the test
# suite's Debian rootfs) with BENCH_BASE_MB MiB (default 2048) of incompressible CUDA-
# library-sized layers, pushes it to Debian's docker-registry on 127.0.0.1, and builds
# an app on it (a wheels layer and a files layer, no `python:` in the spec, pushed to
# the same registry) side by side with the baseline, what a Docker-style builder does
# first: pull the whole base (`skopeo copy docker://... oci:DIR`).
#
#   baseline        skopeo copy of the base, cold (what `FROM` costs a builder without it)
#   cold            paddle-image build, empty cache: the base's view is streamed once
#   warm            paddle-image build again with a changed file, same cache: the view
#                   is read from the cache, no base layer byte is read (the config is)
#
# Each line: seconds, peak RSS (GNU time %M), bytes read from the registry (the build's
# metadata `registry.bytes_downloaded`; skopeo's: the base's size), bytes mounted, and
# what the cache holds afterwards. Then the ratios against the baseline.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
pi=$(realpath "${1:-$root/build/cli/paddle-image}")
mb=${BENCH_BASE_MB:-2048}
work=${BENCH_WORK:-$here/work/base_bytes}
fixtures=${PADDLE_IMAGE_TEST_CACHE:-$HOME/.cache/paddle-image-test}
rootfs=$fixtures/base/rootfs
[[ -x $pi ]] || { echo "base_bytes.sh: $pi not found (build first)" >&2; exit 1; }
[[ -d $rootfs ]] || { echo "base_bytes.sh: no Debian rootfs at $rootfs (run scripts/test.sh once, or set PADDLE_IMAGE_TEST_CACHE)" >&2; exit 1; }
command -v skopeo >/dev/null || { echo "base_bytes.sh: skopeo missing (apt-get install skopeo)" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
cd "$work"
# shellcheck source=../tests/support/registry/registry.sh
source "$root/tests/support/registry/registry.sh"
trap registry_stop_all EXIT
registry_start reg open "$work/srv" >/dev/null
tag=2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6
base=$REG_HOST/paddlepaddle/paddle:$tag

echo "generating and pushing a Paddle-shaped base with $mb MiB of incompressible layers (untimed)..." >&2
/usr/bin/python3 "$root/tests/support/make-paddle-base.py" pbase "$rootfs" "$tag" --big-mb "$mb" \
  --push "$REG_HOST/paddlepaddle/paddle" >/dev/null
read -r base_bytes config_bytes < <(/usr/bin/python3 -c '
import json, sys
d = sys.argv[1]
idx = json.load(open(d + "/index.json"))
lst = json.load(open(d + "/blobs/sha256/" + idx["manifests"][0]["digest"][7:]))
m = json.load(open(d + "/blobs/sha256/" + lst["manifests"][0]["digest"][7:]))
print(sum(l["size"] for l in m["layers"]) + m["config"]["size"], m["config"]["size"])' pbase)
rm -rf pbase

/usr/bin/python3 - "$root/tests/support/make-index-wheels.py" <<'PY'
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("miw", sys.argv[1])
miw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(miw)
os.makedirs("app/wheels", exist_ok=True)
miw.write_wheel("app/wheels", "ocrtools", "1.0", "py3-none-any", [("ocrtools/__init__.py", "X = 1\n")])
PY
mkdir -p app/src
echo 'print("train")' >app/src/train.py
cat >app/spec.yaml <<YAML
image: {name: $REG_HOST/team/ocr, tags: [v1]}
base: $base
layers:
  - name: deps
    wheels: wheels/
  - name: app
    files:
      - {from: src/, to: /app/}
YAML

measure() { # NAME CMD... -> "seconds rss_kib" in NAME.time
  local name=$1; shift
  /usr/bin/time -f '%e %M' -o "$name.time" "$@" >"$name.out" 2>"$name.err" || {
    echo "base_bytes.sh: $name failed:" >&2; tail -5 "$name.err" >&2; exit 1; }
}
meta() { /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["registry"][sys.argv[2]])' "$1" "$2"; }
cache_kib() { du -sk cache 2>/dev/null | cut -f1; }

measure baseline skopeo copy --src-tls-verify=false "docker://$base" oci:pulled:$tag
build_app() { # NAME
  measure "$1" "$pi" build app/spec.yaml -o "$REG_HOST/team/ocr:v1" --insecure-registry "$REG_HOST" \
    --cache-dir "$work/cache" --metadata-file "$1.json" -q
}
build_app cold
cold_cache=$(cache_kib)
cold_views=$(find cache -path '*base-view*' -type f | wc -l)
cold_blobs=$(find cache -type f -size +100M | wc -l)
echo 'print("train v2")' >app/src/train.py
build_app warm

read -r b_s b_rss <baseline.time
read -r c_s c_rss <cold.time
read -r w_s w_rss <warm.time
row() { printf '  %-52s %8s s %8.1f MB RSS %10s B read %10s B mounted\n' "$@"; }
echo "paddle-image base-bytes benchmark: a build on a $mb MiB Paddle-shaped base in a registry"
echo "  host: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo) RAM; base: $base_bytes bytes in the registry"
row "baseline: skopeo copy of the base (what FROM pulls)" "$b_s" "$(echo "$b_rss/1024" | bc -l)" "$base_bytes" "-"
row "cold: paddle-image build, empty cache" "$c_s" "$(echo "$c_rss/1024" | bc -l)" "$(meta cold.json bytes_downloaded)" "$(meta cold.json bytes_mounted)"
row "warm: paddle-image build, a file changed, view cached" "$w_s" "$(echo "$w_rss/1024" | bc -l)" "$(meta warm.json bytes_downloaded)" "$(meta warm.json bytes_mounted)"
echo "  cache after the cold build: $cold_cache KiB ($cold_views cached base view(s), $cold_blobs file(s) over 100 MB)"
echo "ratios (baseline / paddle-image; above 1: paddle-image needs less):"
printf '  seconds:      cold %.2fx   warm %.2fx\n' "$(echo "$b_s/$c_s" | bc -l)" "$(echo "$b_s/$w_s" | bc -l)"
cold_read=$(meta cold.json bytes_downloaded)
warm_read=$(meta warm.json bytes_downloaded)
printf '  bytes read:   cold %.2fx   warm %.0fx (the config, %s bytes, and the manifests are all it reads)\n' \
  "$(echo "$base_bytes/($cold_read+1)" | bc -l)" "$(echo "$base_bytes/($warm_read+1)" | bc -l)" "$config_bytes"
echo "goals: $( [[ $cold_read -le $((base_bytes + base_bytes / 100)) ]] && echo MET || echo MISSED ) each base blob read at most once cold;" \
  "$( [[ $warm_read -le $config_bytes ]] && echo MET || echo MISSED ) no base layer byte read warm;" \
  "$( [[ $cold_blobs -eq 0 ]] && echo MET || echo MISSED ) no base blob kept in the cache"
