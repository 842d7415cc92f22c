#!/usr/bin/env bash
# The spec and source-tree defects of issue 9, end to end: a file copied to two paths
# keeps each path's mode and owner; duplicate keys, control characters, ids and epochs
# out of range, bad `requires:` values and sources outside the spec's directory are
# input errors with their position; .paddleimageignore and .git are honoured; odd file
# names and a directory given as the spec get a clear error.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
build() { "$PI" build "$@" -q --cache-dir "$WORK/cache"; }
# tar_members LAYOUT TAG: "path mode uid gid type" for every member of every layer.
tar_members() {
  python3 - "$1" "$2" <<'PY'
import gzip, json, sys, tarfile
layout, tag = sys.argv[1], sys.argv[2]
idx = json.load(open(layout + "/index.json"))
d = [m["digest"] for m in idx["manifests"]
     if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag][0]
man = json.load(open(layout + "/blobs/sha256/" + d.split(":")[1]))
for l in man["layers"]:
    with tarfile.open(layout + "/blobs/sha256/" + l["digest"].split(":")[1], "r:*") as t:
        for m in t.getmembers():
            kind = "link" if m.islnk() else "dir" if m.isdir() else "file" if m.isfile() else "other"
            print(m.name.rstrip("/"), oct(m.mode), m.uid, m.gid, kind)
PY
}

# --- 3: one source file copied to two paths with other metadata ---------------
mkdir -p two/src
printf 'print("train")\n' >two/src/train.py
cat >two/spec.yaml <<'YAML'
image: {tags: [v1]}
layers:
  - name: app
    files:
      - from: src/
        to: /app/
      - from: src/train.py
        to: /usr/local/bin/train
        mode: "0755"
        owner: "1000:1000"
      - from: src/train.py
        to: /srv/train.py
YAML
check "a file copied to two paths builds" build two/spec.yaml -o oci:two/out
tar_members two/out v1 >two/members.txt
check "the entrypoint keeps its own mode and owner (not a hard link)" \
  grep -qx 'usr/local/bin/train 0o755 1000 1000 file' two/members.txt
check "the first path keeps its mode" grep -qx 'app/train.py 0o644 0 0 file' two/members.txt
check "a copy with identical metadata is still a hard link" grep -qx 'srv/train.py 0o644 0 0 link' two/members.txt
check "umoci unpacks the entrypoint as 0755 1000:1000" bash -c \
  "umoci unpack --image two/out:v1 two/bundle >/dev/null &&
   [[ \$(stat -c '%a %u %g' two/bundle/rootfs/usr/local/bin/train) == '755 1000 1000' ]]"

# --- 6: duplicate keys --------------------------------------------------------
mkdir -p dup/src && echo x >dup/src/a.py
cat >dup/spec.yaml <<'YAML'
layers:
  - name: one
    files: [{from: src/, to: /a/}]
layers:
  - name: two
    files: [{from: src/, to: /b/}]
YAML
expect_fail "a repeated top-level key names both places" 3 \
  "dup/spec.yaml:4:1: layers: key 'layers' appears twice \(first at .*dup/spec.yaml:1:1\)" build dup/spec.yaml

# --- 7: control characters, ids, epochs --------------------------------------
mkdir -p bad/src && echo x >bad/src/a.py
printf 'layers:\n  - name: app\n    files:\n      - from: src/\n        to: "/app/\\0evil"\n' >bad/nul.yaml
expect_fail "a NUL byte in to: is an input error with its position" 3 \
  "nul.yaml:5:13: layers\[0\].files\[0\].to: '/app/\\\\x00evil' holds a control character" build bad/nul.yaml
printf 'layers:\n  - name: app\n    files:\n      - from: src/\n        to: /app/\n        owner: "4294967296:0"\n' >bad/uid.yaml
expect_fail "a uid beyond 4294967294 is refused" 3 "uid.yaml:6:16: layers\[0\].files\[0\].owner: uid and gid must be at most 4294967294" \
  build bad/uid.yaml
printf 'source_date_epoch: 253402300800\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >bad/epoch.yaml
expect_fail "a spec epoch after year 9999 is refused" 3 "epoch.yaml:1:20: source_date_epoch: must be between 0 and 253402300799" \
  build bad/epoch.yaml
sed 1d bad/epoch.yaml >bad/ok.yaml
expect_fail "--source-date-epoch after year 9999 is refused, naming the flag" 2 \
  "--source-date-epoch: '253402300800' is not a Unix time in seconds from 0 to 253402300799" \
  build bad/ok.yaml --source-date-epoch 253402300800
expect_fail "... and so is SOURCE_DATE_EPOCH" 2 "SOURCE_DATE_EPOCH: '253402300800'" \
  env SOURCE_DATE_EPOCH=253402300800 "$PI" build bad/ok.yaml -q --cache-dir "$WORK/cache"
check "the last second of year 9999 is accepted and skopeo reads the created time" bash -c \
  "'$PI' build bad/ok.yaml -q --cache-dir '$WORK/cache' --source-date-epoch 253402300799 -o oci:bad/max:v1 &&
   skopeo inspect --config oci:bad/max:v1 | grep -q '\"created\": \"9999-12-31T23:59:59Z\"'"

# --- 8: requires values -------------------------------------------------------
for r in 'cuda: banana|requires.cuda' 'driver_min: x.y|requires.driver_min' 'gpu_archs: [ampere]|requires.gpu_archs\[0\]'; do
  printf 'requires:\n  %s\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' "${r%%|*}" >bad/req.yaml
  expect_fail "requires ${r%%|*} is refused with its position" 3 "req.yaml:2:[0-9]+: ${r##*|}: " build bad/req.yaml
done

# --- 12: sources outside the spec's directory, .paddleimageignore, .git --------
mkdir -p outside && echo secret >outside/secret.txt
mkdir -p proj/src/.git proj/src/data
printf 'print(1)\n' >proj/src/main.py
echo ref >proj/src/.git/HEAD
echo big >proj/src/model.ckpt
echo keep >proj/src/keep.ckpt
echo raw >proj/src/data/raw.bin
ln -s ../outside proj/src-out
cat >proj/etc.yaml <<'YAML'
layers:
  - name: app
    files: [{from: /etc/passwd, to: /etc/passwd}]
YAML
expect_fail "from: /etc/passwd is refused without allow_outside" 3 \
  "etc.yaml:3:20: layers\[0\].files\[0\].from: source '/etc/passwd' lies outside the spec's directory" build proj/etc.yaml
expect_fail "... with the opt-in as the fix" 3 "" build proj/etc.yaml
check "... the hint names allow_outside" grep -q 'allow_outside: true' "$WORK/err.txt"
printf 'layers:\n  - name: app\n    files: [{from: ../../.., to: /host/}]\n' >proj/up.yaml
expect_fail "from: ../../.. is refused" 3 "lies outside the spec's directory" build proj/up.yaml
printf 'layers:\n  - name: app\n    files: [{from: src-out/secret.txt, to: /s}]\n' >proj/link.yaml
expect_fail "a symlink that leads outside is refused (checked after realpath)" 3 "lies outside the spec's directory" \
  build proj/link.yaml
printf 'image: {tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: ../outside/secret.txt, to: /s, allow_outside: true}]\n' >proj/opt-in.yaml
check "allow_outside: true lets it in" build proj/opt-in.yaml -o oci:proj/opt-in

printf 'image: {tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >proj/spec.yaml
check "a project builds with the default ignore rules" build proj/spec.yaml -o oci:proj/out1
tar_members proj/out1 v1 >proj/m1.txt
check ".git is left out by default" bash -c "! grep -q '^app/.git' proj/m1.txt"
check "... other files are in" grep -q '^app/model.ckpt ' proj/m1.txt
d1=$(manifest_digest proj/out1 v1)
printf '# build outputs\n*.ckpt\n!keep.ckpt\n/src/data/\n' >proj/.paddleimageignore
check "with a .paddleimageignore" build proj/spec.yaml -o oci:proj/out2
tar_members proj/out2 v1 >proj/m2.txt
check "... its patterns leave files out" bash -c "! grep -q '^app/model.ckpt ' proj/m2.txt && ! grep -q '^app/data' proj/m2.txt"
check "... '!' brings one back" grep -q '^app/keep.ckpt ' proj/m2.txt
check "... and the layer changed (the ignore file is part of the cache key)" \
  test "$(manifest_digest proj/out2 v1)" != "$d1"
printf '!.git\n' >>proj/.paddleimageignore
check "'!.git' asks for .git" build proj/spec.yaml -o oci:proj/out3
tar_members proj/out3 v1 >proj/m3.txt
check "... and it is in the layer" grep -q '^app/.git/HEAD ' proj/m3.txt

# --- 13a: a file name that is not UTF-8 ----------------------------------------
mkdir -p odd/src && touch "odd/src/bad$(printf '\377')name.py"
printf 'layers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >odd/spec.yaml
expect_fail "a non-UTF-8 file name is an input error with the name escaped" 3 "bad\\\\xffname.py' is not valid UTF-8" \
  build odd/spec.yaml
check "... with a hint to leave it out" grep -q '.paddleimageignore pattern' "$WORK/err.txt"
printf 'src/bad?name.py\n' >odd/.paddleimageignore
check "... and building works once it is ignored" build odd/spec.yaml -o oci:odd/out

# --- a directory given as the spec ---------------------------------------------
expect_fail "a directory as the spec says so and names spec.yaml in it" 3 "'proj' is a directory" build proj
check "... the hint names proj/spec.yaml" grep -q 'proj/spec.yaml' "$WORK/err.txt"

finish
