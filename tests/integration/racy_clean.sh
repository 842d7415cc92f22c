#!/usr/bin/env bash
# Racily clean files (docs/caching.md): on a file system of 1-second timestamps (a
# loop-mounted ext4 made with 128-byte inodes), a same-size edit and a new file within
# the second after a build change no stat data the build saw. The next build, and every
# one after it, must still give the digest of a build on an empty cache: the walk memo
# is not kept for a walk that saw racily clean paths, and the key file of a stat-keyed
# layer checks such files by content. Needs root (mount -o loop), as CI has.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
MNT=$WORK/mnt
cleanup() { umount "$MNT" 2>/dev/null || true; }
trap cleanup EXIT
truncate -s 64M fs.img
mkfs.ext4 -q -F -I 128 fs.img 2>/dev/null
mkdir -p "$MNT"
mount -o loop fs.img "$MNT"
js() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2" "$1"; }
digest() { js "$1" 'print(j["digest"])'; }
export -f js digest
pib() { # NAME CACHE_DIR [FLAGS...]: a build into oci:lay:NAME, its --json in NAME.json
  local name=$1 cache=$2
  shift 2
  "$PI" build "$P/spec.yaml" --revision r --cache-dir "$cache" -o "oci:lay:$name" -q --json "$@" >"$name.json" \
    2>"$name.err" || { cat "$name.err"; exit 1; }
}

P=$MNT/p
mkdir -p "$P/src" "$P/w" "$P/conf"
cp "$WHEELS"/purepkg-*.whl "$P/w/"
cat >"$P/spec.yaml" <<'YAML'
image: {name: example.com/team/racy, tags: [v1]}
base: scratch
python: {version: "3.11", glibc: "2.36"}
layers:
  - name: deps
    wheels: {dir: w/}
  - name: app
    files:
      - {from: src/, to: /app/}
  - name: also
    files:
      - {from: src/, to: /app/}
  - name: conf
    data:
      - {from: conf/, to: /etc/app/}
YAML
check "the file system has 1-second timestamps" bash -c "touch '$P/t' && test \"\$(stat -c %y '$P/t' | cut -d. -f2 | cut -c1-9)\" = 000000000"

# Tries until the build and the edit both fall in the second the files were written in
# (the build takes well under a second; a slow moment only costs another try).
same_second=0
for try in 1 2 3 4 5 6 7 8; do
  rm -rf cache "$P/src"/* "$P/conf"/*
  python3 -c 'import time; time.sleep(1.02 - time.time() % 1)' # just after a second starts
  printf 'print(1)\n' >"$P/src/train.py"
  printf 'a = 1\n' >"$P/conf/a.toml"
  written=$(stat -c %Y "$P/src/train.py")
  pib first cache
  printf 'print(2)\n' >"$P/src/train.py" # the same size, its mtime in the same second
  printf 'b = 2\n' >"$P/conf/b.toml"     # a new entry: the directory's mtime stays in that second too
  if [[ $(stat -c %Y "$P/src/train.py") == "$written" && $(stat -c %Y "$P/conf") == "$written" ]]; then
    same_second=1
    break
  fi
done
check "a build and an edit fell in one second (try $try)" test "$same_second" = 1

pib cold cold
pib next cache -vv
check "the next build gives the digest of a build on an empty cache" bash -c \
  "test \"\$(digest next.json)\" = \"\$(digest cold.json)\" && test \"\$(digest next.json)\" != \"\$(digest first.json)\""
check "... it rebuilt the layer of src/ (the other of the same rules has its bytes) and the one of conf/" js next.json \
  'assert [l["status"] for l in j["layers"]] == ["reused", "rebuilt", "reused", "rebuilt"], j["layers"]'
check "... each layer the cold build's (the edited file's layer and the new entry's)" bash -c \
  "test \"\$(js next.json 'print([l[\"digest\"] for l in j[\"layers\"]])')\" = \"\$(js cold.json 'print([l[\"digest\"] for l in j[\"layers\"]])')\""
check "... the first build kept no walk memo for the racily clean walk" bash -c \
  "! grep -q 'no path changed; not walking' next.err"
sleep 2.2
pib later cache -vv
check "a build seconds later: the same digest, every layer reused" bash -c \
  "test \"\$(digest later.json)\" = \"\$(digest cold.json)\" &&
   js later.json 'assert [l[\"status\"] for l in j[\"layers\"]] == [\"reused\"] * 4, j[\"layers\"]'"
pib again cache -vv
check "... and the one after it reuses the walk memos (nothing racy any more), one per layer of the same rules" bash -c \
  "test \"\$(digest again.json)\" = \"\$(digest cold.json)\" && test \$(grep -c 'no path changed; not walking' again.err) = 3"

# A same-size edit of a wheel within the second of the build: the wheels layer's stat
# key has the same hole, its key file the same check. The edit changes the first
# entry's time in the zip's local header: other bytes, the same size, a valid wheel.
W=$(ls "$P"/w/purepkg-*.whl)
cp "$W" whl.orig
wheel_same_second=0
for try in 1 2 3 4 5 6 7 8; do
  python3 -c 'import time; time.sleep(1.02 - time.time() % 1)'
  cp whl.orig "$W"
  wr=$(stat -c %Y "$W")
  pib w1 cache
  python3 - "$W" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    head = bytearray(f.read(14))
    assert head[:4] == b"PK\x03\x04"
    head[10] ^= 0x20  # the local header's mod time
    f.seek(0)
    f.write(head)
PY
  if [[ $(stat -c %Y "$W") == "$wr" ]]; then
    wheel_same_second=1
    break
  fi
done
check "a build and a wheel's edit fell in one second (try $try)" test "$wheel_same_second" = 1
pib w2 cache
check "a same-second, same-size change of a wheel rebuilds the wheels layer" js w2.json \
  'assert j["layers"][0]["status"] == "rebuilt", j["layers"]'
finish
