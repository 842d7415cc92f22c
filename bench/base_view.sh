#!/usr/bin/env bash
# The base view on a large base: one streaming pass over every layer, with peak memory.
#
#   bench/base_view.sh [BINARY]          (default build/cli/paddle-image)
#
# Generates an OCI layout of BENCH_PATHS paths (default 200000) in 4 gzip layers (the
# upper ones with whiteouts, an opaque directory and replacements), then times, side by
# side, ROUNDS times each (median):
#   baseline   `tar -tvzf` of every layer (GNU tar listing the same headers)
#   view       `paddle-image inspect --base-view oci:DIR --json` (read, merge, facts, print)
# and prints the ratio view/baseline, the view's peak RSS (GNU time %M) against the
# 512 MiB bound, and the size of the cached view (base-view/<hex>.zst) that a
# build on the base writes.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
pi=${1:-$root/build/cli/paddle-image}
paths=${BENCH_PATHS:-200000}
rounds=${ROUNDS:-3}
work=${BENCH_WORK:-$here/work/base_view}
rm -rf "$work"
mkdir -p "$work"
cd "$work"
/usr/bin/python3 - "$paths" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
n = int(sys.argv[1])
os.makedirs("base/blobs/sha256", exist_ok=True)
def blob(b):
    d = hashlib.sha256(b).hexdigest()
    open("base/blobs/sha256/" + d, "wb").write(b)
    return "sha256:" + d, len(b)
layers, diff_ids = [], []
per = n // 4
for li in range(4):
    raw = io.BytesIO()
    t = tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT)
    def add(name, kind=tarfile.REGTYPE, data=b"", mode=0o644, link=""):
        ti = tarfile.TarInfo(name); ti.type = kind; ti.mode = mode; ti.mtime = 0; ti.linkname = link
        ti.size = len(data) if kind == tarfile.REGTYPE else 0
        t.addfile(ti, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    for i in range(per // 40):
        d = "usr/lib/pkg%d/mod%d" % (li, i)
        add(d, tarfile.DIRTYPE, mode=0o755)
        for k in range(39):
            add("%s/f%d.py" % (d, k), data=b"x")
    if li > 0:
        for i in range(0, per // 40, 50):
            add("usr/lib/pkg%d/mod%d/.wh.f1.py" % (li - 1, i))
        add("usr/lib/pkg%d/mod0/.wh..wh..opq" % (li - 1))
        add("usr/lib/pkg%d/mod1" % (li - 1), data=b"now a file")
        add("usr/local/cuda-%d" % li, tarfile.DIRTYPE, mode=0o755)
        add("usr/local/cuda", tarfile.SYMTYPE, link="cuda-%d" % li)
    t.close()
    r = raw.getvalue()
    g = io.BytesIO()
    with gzip.GzipFile(fileobj=g, mode="wb", compresslevel=1, mtime=0) as z:
        z.write(r)
    d, s = blob(g.getvalue())
    layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": d, "size": s})
    diff_ids.append("sha256:" + hashlib.sha256(r).hexdigest())
cfg = {"architecture": "amd64", "os": "linux", "config": {"Env": ["CUDA_VERSION=12.0.1"]},
       "rootfs": {"type": "layers", "diff_ids": diff_ids}}
cd, cs = blob(json.dumps(cfg).encode())
m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
     "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs}, "layers": layers}
md, ms = blob(json.dumps(m).encode())
open("base/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
           "digest": md, "size": ms, "annotations": {"org.opencontainers.image.ref.name": "big"}}]},
          open("base/index.json", "w"))
PY
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base_t=() view_t=() rss=0
for ((i = 0; i < rounds; i++)); do
  s=$(date +%s.%N)
  for l in base/blobs/sha256/*; do tar -tvzf "$l" >/dev/null 2>&1 || true; done
  base_t+=("$(echo "$(date +%s.%N) - $s" | bc)")
  /usr/bin/time -f '%e %M' -o time.txt "$pi" inspect --base-view oci:base:big --json >view.json
  read -r secs kib <time.txt
  view_t+=("$secs")
  ((kib > rss)) && rss=$kib
done
b=$(printf '%s\n' "${base_t[@]}" | median)
v=$(printf '%s\n' "${view_t[@]}" | median)
nodes=$(/usr/bin/python3 -c 'import json; print(len(json.load(open("view.json"))["nodes"]))')
mkdir -p app && echo x >app/x
printf 'image: {name: example.com/b/app}\nbase: oci:%s/base:big\nlayers:\n  - name: a\n    files: [{from: x, to: /opt/x}]\n' "$work" >app/spec.yaml
"$pi" build app/spec.yaml -q -o oci:out --cache-dir "$work/cache" >/dev/null
cached=$(stat -c %s "$work"/cache/base-view/*.zst)
printf 'paths in the view:          %s (generated %s, after whiteouts)\n' "$nodes" "$paths"
printf 'tar -tvzf of the layers:    %.2f s (median of %d)\n' "$b" "$rounds"
printf 'inspect --base-view --json: %.2f s  ratio %.2f\n' "$v" "$(echo "$v / $b" | bc -l)"
printf 'peak RSS:                   %d MiB (bound 512 MiB)\n' "$((rss / 1024))"
printf 'cached view:                %d KiB (%.1f bytes per path)\n' "$((cached / 1024))" "$(echo "$cached / $nodes" | bc -l)"
((rss / 1024 < 512)) || { echo "base_view.sh: peak RSS over 512 MiB" >&2; exit 1; }
