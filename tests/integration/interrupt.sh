#!/usr/bin/env bash
# A build killed with SIGKILL at every rename (i.e. just before each rename and just
# after the previous one) and in the middle of writing blobs leaves a layout that
# umoci and skopeo still accept, no half-written blob, and the rerun gives the same
# digest as an uninterrupted build. Kill points are injected with strace, so they are
# exact and repeatable.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
mkdir -p p/src p/models
printf 'print(1)\n' >p/src/app.py
head -c 8000000 /dev/urandom >p/models/w.bin
head -c 3000000 /dev/zero | tr '\0' 'x' >p/models/text.bin
cat >p/spec.yaml <<'YAML'
image: {tags: [v1]}
layers:
  - name: models
    data: [{from: models/, to: /opt/models/}]
  - name: app
    files: [{from: src/, to: /app/}]
YAML
"$PI" build p/spec.yaml -q -j1 --revision r --cache-dir "$WORK/cache0" -o oci:lay0 >/dev/null
# v2: both layers change, so the interrupted build writes new blobs everywhere.
printf 'print(2)\n' >p/src/app.py
head -c 8000000 /dev/urandom >p/models/w.bin
want=$("$PI" build p/spec.yaml -q -j1 --revision r --cache-dir "$WORK/cache-ref" -o oci:ref:v2)
want=${want#*@}

SYSCALLS=rename,renameat,renameat2
# Count the renames and writes of the same interrupted-to-be build (same starting state).
cp -a lay0 lay-count && cp -a cache0 cache-count
strace -f -qq -e trace=$SYSCALLS,write -o calls.log "$PI" build p/spec.yaml -q -j1 --revision r \
  --cache-dir "$WORK/cache-count" -o oci:lay-count:v2 >/dev/null
n=$(grep -cE '^[0-9]+ +rename' calls.log)
nw=$(grep -cE '^[0-9]+ +write' calls.log)
check "the build renames files ($n) and writes ($nw)" test "$n" -ge 6 -a "$nw" -ge 8

attempt() { # NAME STRACE-INJECT
  local name=$1 inject=$2
  rm -rf "lay-$name" "cache-$name"
  cp -a lay0 "lay-$name"
  cp -a cache0 "cache-$name"
  local rc=0
  strace -f -qq -o /dev/null -e trace=$SYSCALLS,write -e "inject=$inject" \
    "$PI" build p/spec.yaml -q -j1 --revision r --cache-dir "$WORK/cache-$name" -o "oci:lay-$name:v2" \
    >/dev/null 2>&1 || rc=$?
  local ok=1
  [[ $rc -ne 0 ]] || { echo "$name: build was not killed"; ok=0; }
  blobs_intact "lay-$name" || ok=0
  blobs_intact "cache-$name" || ok=0
  umoci stat --image "lay-$name:latest" >/dev/null 2>&1 || umoci stat --image "lay-$name:v1" >/dev/null 2>&1 || {
    echo "$name: umoci rejects the layout"; ok=0; }
  skopeo inspect "oci:lay-$name:v1" >/dev/null 2>&1 || { echo "$name: skopeo rejects v1"; ok=0; }
  if grep -q '"v2"' "lay-$name/index.json"; then
    umoci stat --image "lay-$name:v2" >/dev/null 2>&1 || { echo "$name: v2 listed but unreadable"; ok=0; }
  fi
  local got
  got=$("$PI" build p/spec.yaml -q -j1 --revision r --cache-dir "$WORK/cache-$name" -o "oci:lay-$name:v2") || ok=0
  [[ "${got#*@}" == "$want" ]] || { echo "$name: rerun gave ${got#*@}, want $want"; ok=0; }
  skopeo inspect "oci:lay-$name:v2" >/dev/null 2>&1 || { echo "$name: skopeo rejects rerun"; ok=0; }
  blobs_intact "lay-$name" || ok=0
  [[ $ok -eq 1 ]]
}
for i in $(seq 1 "$n"); do
  check "killed at rename $i of $n, then rerun" attempt "rename$i" "$SYSCALLS:signal=KILL:when=$i"
done
for w in 2 $((nw / 3)) $((nw * 2 / 3)) $((nw - 1)); do
  check "killed at write $w (mid-blob), then rerun" attempt "write$w" "write:signal=KILL:when=$w"
done
finish
