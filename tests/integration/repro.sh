#!/usr/bin/env bash
# Reproducibility: the same spec built in two directories with different file mtimes,
# umask and creation order gives identical digests (gzip and zstd, 1 and 2 threads);
# a cold build and a cache-hit build give identical digests.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"

# Tree A: created in one order, umask 022, mtimes far in the past.
(umask 022; make_project a)
find a -exec touch -h -d '1999-01-01 00:00:00' {} +
# Tree B: created in reverse order with umask 077 (then made readable as A is), mtimes
# in the future, extra files created and deleted to shuffle inode/dirent order.
(
  umask 077
  mkdir -p b/wheels b/models b/src/pkg
  for i in 1 2 3; do touch "b/src/junk$i"; done
  cp a/spec.yaml b/spec.yaml
  cp a/models/weights.bin b/models/
  for f in $(ls a/wheels | sort -r); do cp "a/wheels/$f" "b/wheels/$f"; done
  cp a/src/pkg/__init__.py b/src/pkg/
  cp a/src/train.py b/src/
  rm -f b/src/junk*
)
# no chmod: modes are normalised whatever the umask was
find b -exec touch -h -d '2037-06-01 12:34:56' {} +

for comp in gzip zstd; do
  for j in 1 2; do
    da=$("$PI" build a/spec.yaml -q -j "$j" --compression "$comp" --revision r1 --cache-dir "$WORK/cache-a-$comp-$j" -o oci:out-a-$comp-$j:t)
    db=$("$PI" build b/spec.yaml -q -j "$j" --compression "$comp" --revision r1 --cache-dir "$WORK/cache-b-$comp-$j" -o oci:out-b-$comp-$j:t)
    check "$comp -j$j: same digest from both trees" test "${da#*@}" = "${db#*@}"
    eval "digest_${comp}_$j=${da#*@}"
  done
done
check "gzip: 1 and 2 threads give the same digest" test "$digest_gzip_1" = "$digest_gzip_2"
check "zstd: 1 and 2 threads give the same digest" test "$digest_zstd_1" = "$digest_zstd_2"
check "gzip and zstd images differ" test "$digest_gzip_1" != "$digest_zstd_1"

# --compression gpu-node is the spec's `compression: gpu-node` (zstd, level 12): the
# same layers as the spec that names it, zstd's media type, other bytes than level 3.
"$PI" build a/spec.yaml -q --compression gpu-node --revision r1 --cache-dir "$WORK/cache-node" -o oci:node-flag:t >/dev/null
mkdir -p n && cp -r a/. n/
python3 - n/spec.yaml <<'PY'
import sys, yaml
p = sys.argv[1]
d = yaml.safe_load(open(p))
d["compression"] = "gpu-node"
for layer in d.get("layers", []):
    layer.pop("compression", None)
yaml.safe_dump(d, open(p, "w"), sort_keys=False)
PY
"$PI" build n/spec.yaml -q --revision r1 --cache-dir "$WORK/cache-node-spec" -o oci:node-spec:t >/dev/null
check "--compression gpu-node gives the layers of compression: gpu-node" \
  test "$(layer_digests node-flag t)" = "$(layer_digests node-spec t)"
check "--compression gpu-node layers are zstd" bash -c \
  "skopeo inspect --raw oci:node-flag:t | grep -q 'tar+zstd'"
"$PI" build a/spec.yaml -q --compression zstd --revision r1 --cache-dir "$WORK/cache-node" -o oci:node-zstd:t >/dev/null
check "--compression gpu-node is not zstd's default level" \
  test "$(layer_digests node-flag t | tail -1)" != "$(layer_digests node-zstd t | tail -1)"

# Cold vs cache hit.
cold=$("$PI" build a/spec.yaml -q --revision r1 --cache-dir "$WORK/c1" -o oci:o1:t --metadata-file m1.json)
warm=$("$PI" build a/spec.yaml -q --revision r1 --cache-dir "$WORK/c1" -o oci:o2:t --metadata-file m2.json)
check "cold and cache-hit builds give the same digest" test "${cold#*@}" = "${warm#*@}"
check "second build reused every layer" python3 -c '
import json,sys; m=json.load(open("m2.json")); sys.exit(0 if all(l["status"]=="reused" for l in m["layers"]) else 1)'
check "first build rebuilt every layer" python3 -c '
import json,sys; m=json.load(open("m1.json")); sys.exit(0 if all(l["status"]=="rebuilt" for l in m["layers"]) else 1)'

# SOURCE_DATE_EPOCH sets (not clamps) every mtime: older and newer files alike.
SOURCE_DATE_EPOCH=1700000000 "$PI" build a/spec.yaml -q --revision r1 -o oci:e:t >/dev/null
l=$(layer_digests e t | tail -1)
tar -tvzf "e/blobs/sha256/${l#sha256:}" >listing.txt
check "every entry carries SOURCE_DATE_EPOCH (2023-11-14)" bash -c '! grep -v "2023-11-14" listing.txt'
check "entries are sorted, parents first" bash -c 'awk "{print \$6}" listing.txt | LC_ALL=C sort -c'
check "owners normalised to 0/0" bash -c '! awk "{print \$2}" listing.txt | grep -v "^0/0$"'
cfg_created=$("$PI" inspect oci:e:t --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["created"])')
check "config created follows SOURCE_DATE_EPOCH" test "$cfg_created" = "2023-11-14T22:13:20Z"
default_created=$("$PI" inspect oci:o1:t --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["created"])')
check "default epoch is 1980-01-01 (never the wall clock)" test "$default_created" = "1980-01-01T00:00:00Z"
l=$(layer_digests o1 t | sed -n 1p) # sed reads it all: no SIGPIPE for the writer
check "gzip header has no name and mtime 0" bash -c "head -c 10 o1/blobs/sha256/${l#sha256:} | od -An -tx1 | tr -d ' \n' | grep -qx 1f8b08000000000000ff"

# Host xattrs are dropped; PAX records appear only where a field needs them.
mkdir -p x/src/$(printf 'd%.0s' {1..60})
python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.origin", b"host")' a/src/train.py 2>/dev/null || true
echo deep >"x/src/$(printf 'd%.0s' {1..60})/$(printf 'f%.0s' {1..120}).py"
echo short >x/src/short.py
cat >x/spec.yaml <<'YAML'
layers:
  - name: long
    files: [{from: src/, to: /app/}]
compression: none
YAML
"$PI" build a/spec.yaml -q --compression none -o oci:plain:t >/dev/null
l=$(layer_digests plain t | tail -1)
check "no xattr records in layers" bash -c "! grep -qa -e SCHILY.xattr -e LIBARCHIVE.xattr plain/blobs/sha256/${l#sha256:}"
check "short paths: plain ustar, no PAX header" bash -c "! grep -qa PaxHeader plain/blobs/sha256/${l#sha256:}"
"$PI" build x/spec.yaml -q -o oci:long:t >/dev/null
l=$(layer_digests long t | tail -1)
check "a name ustar cannot hold gets a PAX record" grep -qa "path=app/" "long/blobs/sha256/${l#sha256:}"
check "and GNU tar reads it back" bash -c "tar -tf long/blobs/sha256/${l#sha256:} | grep -q 'fff.py$'"

# split (docs/spec.md): a big layer as parts. Unpacked by umoci, the parts are the one
# layer's tree (modes, times, hard links); another copy of the tree gives the same
# digests; hard links travel with their file, even one sorted after later parts' files.
mkdir -p s/big/lib s/big/share
python3 - s/big/lib <<'PY'
import os, random, sys
r = random.Random(7)
for i in range(6):
    with open(os.path.join(sys.argv[1], f"lib{i}.so"), "wb") as f:
        f.write(r.randbytes(400_000))
PY
ln s/big/lib/lib5.so s/big/share/lib5-again.so
ln s/big/lib/lib0.so s/big/share/zz-lib0.so
echo text >s/big/share/readme
printf 'split: 1Mi\nlayers:\n  - name: big\n    files: [{from: big/, to: /opt/big/}]\n' >s/spec.yaml
cp -a s s2 && find s2 -exec touch -h -d '2030-01-01 00:00:00' {} +
sed '/^split:/d' s/spec.yaml >s/whole.yaml
"$PI" build s/spec.yaml -q --revision r1 --cache-dir "$WORK/cache-split" -o oci:split:t >/dev/null
"$PI" build s2/spec.yaml -q --revision r1 --cache-dir "$WORK/cache-split2" -o oci:split2:t >/dev/null
"$PI" build s/whole.yaml -q --revision r1 --cache-dir "$WORK/cache-split" -o oci:whole:t >/dev/null
check "split: 2.4 MB in parts of 1 MiB gives 3 layers" test "$(layer_digests split t | wc -l)" = 3
check "split: the same digests from another copy of the tree" test "$(layer_digests split t)" = "$(layer_digests split2 t)"
umoci unpack --image split:t split-unpacked >/dev/null 2>&1
umoci unpack --image whole:t whole-unpacked >/dev/null 2>&1
listing() { (cd "$1/rootfs" && find . -printf '%p %y %m %U:%G %T@ %s %n\n' | sort); }
check "split: umoci unpacks the parts to the tree of the one layer" \
  test "$(listing split-unpacked)" = "$(listing whole-unpacked)"
check "split: the unpacked tree is not empty and keeps the hard links" \
  bash -c "grep -q '^./opt/big/share/zz-lib0.so f 644 0:0 .* 400000 2$' <<<'$(listing split-unpacked)'"
check "split: the bytes are the layer's" diff -r split-unpacked/rootfs whole-unpacked/rootfs
finish
