#!/usr/bin/env bash
# Build and command-line defects of issue 9: a base blob corrupted in place is caught
# (exit 8) without re-hashing an untouched base on every build; a dirty work tree marks
# the revision; wheels whose file name and .dist-info disagree and pip index options in
# a lock are refused; size flags name themselves and --chunk-size has a floor; a
# relative XDG_CACHE_HOME is ignored.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
build() { CI=true "$PI" build "$@" --cache-dir "$WORK/cache"; }

# --- 4: base blobs are verified ------------------------------------------------
mkdir -p base/src app/src
echo base >base/src/b.txt
printf 'image: {tags: [v1]}\nlayers:\n  - name: files\n    files: [{from: src/, to: /b/}]\n' >base/spec.yaml
check "a base layout builds" build base/spec.yaml -q -o oci:baseimg
echo app >app/src/a.txt
printf 'image: {tags: [v1]}\nbase: oci:../baseimg:v1\nlayers:\n  - name: app\n    files: [{from: src/, to: /a/}]\n' >app/spec.yaml
build app/spec.yaml -o oci:out1 >/dev/null 2>build1.log
check "the first build on a local base hashes its blob" grep -q 'verified 1 base layer blob' build1.log
build app/spec.yaml -o oci:out2 >/dev/null 2>build2.log
check "a second build does not hash the untouched base again (even after linking it into an output)" \
  bash -c "! grep -q 'verified .* base layer blob' build2.log"
layer=$(layer_digests baseimg v1 | sed -n 1p)
blob=baseimg/blobs/sha256/${layer#sha256:}
size_before=$(stat -c %s "$blob")
printf 'X' | dd of="$blob" bs=1 seek=30 conv=notrunc status=none
check "the corruption kept the size" test "$(stat -c %s "$blob")" = "$size_before"
expect_fail "a base blob corrupted in place is exit 8 naming the blob and the base" 8 \
  "base layer $layer in oci:../baseimg:v1 is corrupt" build app/spec.yaml -q -o oci:out3
check "... and no output was written" test ! -e out3/index.json

# --- revision of a dirty work tree -------------------------------------------
mkdir -p repo/src && echo 'print(1)' >repo/src/main.py
printf 'image: {tags: [v1]}\nlayers:\n  - name: app\n    files: [{from: src/, to: /app/}]\n' >repo/spec.yaml
git -C repo init -q && git -C repo add -A && git -C repo -c user.name=t -c user.email=t@example.com commit -qm init
head=$(git -C repo rev-parse HEAD)
"$PI" build repo/spec.yaml -q --cache-dir "$WORK/cache" -o oci:repo/out --metadata-file repo/clean.json >/dev/null
check "a clean tree gives HEAD as the revision" grep -q "\"revision\": \"$head\"" repo/clean.json
echo 'print(2)' >repo/src/main.py
"$PI" build repo/spec.yaml -q --cache-dir "$WORK/cache" -o oci:repo/out --metadata-file repo/dirty.json >/dev/null
check "uncommitted changes give HEAD-dirty" grep -q "\"revision\": \"$head-dirty\"" repo/dirty.json
mkdir -p nocommit/src && echo 'print(3)' >nocommit/src/main.py && cp repo/spec.yaml nocommit/ && git -C nocommit init -q
"$PI" build nocommit/spec.yaml -q --cache-dir "$WORK/cache" -o oci:nocommit/out --metadata-file nocommit/m.json >/dev/null
check "a repository without a commit gives no revision" python3 -c '
import json, sys; sys.exit(0 if not json.load(open("nocommit/m.json")).get("revision") else 1)'
check "--revision wins over git" bash -c "'$PI' build repo/spec.yaml -q --cache-dir '$WORK/cache' -o oci:repo/out --revision abc123 --metadata-file repo/flag.json >/dev/null && grep -q '\"revision\": \"abc123\"' repo/flag.json"

# --- 14: wheel file name vs .dist-info, and pip options in a lock ---------------
mkdir -p w/wheels w/src && echo x >w/src/x.py
python3 - w/wheels <<'PY'
import base64, hashlib, sys, zipfile
def rec(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
members = {"evil/__init__.py": b"X = 1\n",
           "evil-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
           "evil-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"}
record = "".join(f"{n},{rec(d)},{len(d)}\n" for n, d in members.items()) + "evil-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1] + "/requests-1.0-py3-none-any.whl", "w") as z:
    for n, d in members.items():
        z.writestr(n, d)
    z.writestr("evil-1.0.dist-info/RECORD", record)
PY
cat >w/spec.yaml <<'YAML'
python: {version: "3.11"}
layers:
  - name: deps
    wheels: wheels/
YAML
expect_fail "a wheel renamed to another project is refused" 3 \
  "wheel requests-1.0-py3-none-any.whl names requests 1.0 but its evil-1.0.dist-info says evil 1.0" build w/spec.yaml -q
mkdir -p lock/wheels && cp "$WHEELS"/purepkg-*.whl lock/wheels/
sha=$(sha256sum lock/wheels/purepkg-*.whl | cut -d' ' -f1)
printf -- '--index-url https://mirror.example/simple\npurepkg==1.0 --hash=sha256:%s\n' "$sha" >lock/requirements.lock
cat >lock/spec.yaml <<'YAML'
python: {version: "3.11"}
layers:
  - name: deps
    wheels: {dir: wheels/, lock: requirements.lock}
YAML
expect_fail "--index-url in the lock of a directory layer is refused with its line" 3 \
  "requirements.lock:1: pip option '--index-url' names a package index, but layer 'deps' installs the wheels in" \
  build lock/spec.yaml -q

# --- 15: sizes, chunk floor, XDG ---------------------------------------------
expect_fail "--chunk-size below 64K is a usage error naming the flag" 2 "--chunk-size: '1' is below the minimum of 64K" \
  "$PI" push oci:out1:v1 127.0.0.1:9/x --chunk-size 1
expect_fail "a bad --max-size names the flag" 2 "--max-size: 'lots' is not a size" "$PI" cache prune --max-size lots
expect_fail "a -j out of range names the flag" 2 "--threads: Value 999 not in range" "$PI" build spec.yaml -j 999
expect_fail "a -j that is not a number names the flag" 2 "--threads: Value abc" "$PI" build spec.yaml -j abc
expect_fail "a bad --jobs names the flag" 2 "--jobs" "$PI" push oci:x:v1 127.0.0.1:9/x:v1 --jobs 0
expect_fail "a bad --cache-max-size names the flag, before building" 2 "--cache-max-size: '5Q' has an unknown unit" \
  build app/spec.yaml -q -o oci:out4 --cache-max-size 5Q
check "... and nothing was built" test ! -e out4
mkdir -p xdg
(cd xdg && env -u PADDLE_IMAGE_CACHE XDG_CACHE_HOME=relative HOME="$WORK/home" "$PI" cache info --json >info.json)
check "a relative XDG_CACHE_HOME is ignored (HOME's .cache is used)" \
  grep -q "\"cache_dir\": \"$WORK/home/.cache/paddle-image\"" xdg/info.json
check "... and nothing was created in the current directory" test ! -e xdg/relative

finish
