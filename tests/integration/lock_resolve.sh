#!/usr/bin/env bash
# `paddle-image lock` resolving unpinned requirements (docs/wheels.md) against a local
# index (tests/support/index_server.py serving tests/support/make-resolve-index.py's
# scenario wheels):
# - the versions chosen are Debian pip's (`pip install --dry-run --report`) for the same
#   input, index and target: backtracking, an extra, markers, Requires-Python, a yanked
#   file, pre-releases, platform wheels, a constraints file;
# - the lock is deterministic, says who needs each line, and a re-lock on a warm cache
#   fetches no metadata; an existing lock's versions are kept unless -U/-P moves them;
# - on a Paddle-shaped base (make-paddle-base.py): what the base meets is left out (and
#   said), what the base keeps binds the lock (Paddle 2.4's protobuf<=3.20.0 against a
#   protobuf>=4 line: a derivation, exit 3), a base distribution the input names may be
#   replaced;
# - bad input, a refusing or failing index and metadata that lies about its wheel: each a
#   clear error with its exit code, and the lock already written is left as it was.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/index_server.sh"
cd "$WORK"

# ---- the index ----------------------------------------------------------------------
SCN=$FIXTURES/resolve-index
/usr/bin/python3 "$SUPPORT/make-resolve-index.py" "$SCN" scenario
YANK=(--yank yank-1.1-py3-none-any.whl=broken)
# app 2.0's metadata, lying: it claims no requirement at all (its wheel needs lib, util).
printf 'Metadata-Version: 2.1\nName: app\nVersion: 2.0\n\n' >lie.metadata
start_server main "$SCN" "${YANK[@]}"
start_server html "$SCN" --no-json "${YANK[@]}"
start_server auth "$SCN" --auth user:s3cret
start_server down "$SCN" --fail-first 1000
start_server drip "$SCN" --drip
start_server lie "$SCN" --lie-metadata app-2.0-py3-none-any.whl="$WORK/lie.metadata"
LOCK=("$PI" lock --cache-dir "$WORK/cache" -q)

printf 'python: {version: "3.11", glibc: "2.36"}\nlayers:\n  - name: deps\n    wheels: {lock: requirements.lock}\n' \
  >spec.yaml
cat >constraints.txt <<'EOF'
srv<2.1
unused<1
EOF
# What each line asks of a resolver is in make-resolve-index.py.
cat >reqs.in <<'EOF'
app
web[server]
plat
modern
yank
pre
onlypre
native
top
winonly; sys_platform == "win32"
-c constraints.txt
EOF

# versions FILE: "name==version" per package of a lock, extras dropped, sorted.
versions() { grep -E '^[A-Za-z0-9]' "$1" | sed -E 's/ *\\$//; s/\[[^]]*\]//' | LC_ALL=C sort; }
export -f versions

# ---- the same answers as pip ---------------------------------------------------------
run lock "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_main/simple/" -o requirements.lock
rc_is "lock resolves the scenario" 0 lock
# Debian's pip 23.0 cannot read the PEP 691 JSON page of a PEP 714 index (its
# dist-info-metadata object: "unhashable type: 'dict'"), so pip reads the HTML pages of
# the same wheels; the answer does not depend on the page format.
run pip /usr/bin/python3 -m pip install --dry-run --report pip.json --ignore-installed --only-binary :all: \
  --python-version 3.11 --implementation cp --abi cp311 --platform manylinux_2_36_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --target "$WORK/pip-target" \
  --index-url "$URL_html/simple/" --no-cache-dir --quiet --disable-pip-version-check -r reqs.in
rc_is "Debian's pip resolves the same input" 0 pip
/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("\n".join(sorted("%s==%s" % (i["metadata"]["name"], i["metadata"]["version"]) for i in r["install"])))' \
  pip.json >pip.versions
check "the versions are pip's (app 2.0 after backtracking, srv 2.0 under the constraint, onlypre 1.0rc1, no yanked yank 1.1, no 3.13-only modern 2.0, no Windows-only native 2.0)" \
  diff pip.versions <(versions requirements.lock)
check "... which are the expected ones" diff pip.versions - <<'EOF'
app==2.0
lib==1.5
linuxdep==1.0
mid==1.0
modern==1.0
native==1.0
onlypre==1.0rc1
plat==1.0
pre==1.0
srv==2.0
top==1.0
util==1.2
web==1.0
yank==1.0
EOF
check "each line says who needs it (an input line, a package, an extra)" bash -c \
  "grep -A2 '^app==2.0' requirements.lock | grep -q '# via reqs.in:1' &&
   grep -A2 '^linuxdep==1.0' requirements.lock | grep -q '# via plat 1.0' &&
   grep -A2 '^srv==2.0' requirements.lock | grep -q '# via web\[server\] 1.0' &&
   grep -q '^web\[server\]==1.0' requirements.lock"
check "every line has the hash of its one fitting wheel (native: the manylinux wheel, not the Windows one)" bash -c \
  "test \$(grep -c -- '--hash=sha256:' requirements.lock) = 14 &&
   grep -A1 '^native==1.0' requirements.lock | grep -q \$(sha256sum '$SCN/native-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl' | cut -c1-64)"
check "pip installs from the lock in hash-checking mode (--no-deps: the lock is the closure)" \
  /usr/bin/python3 -m pip install --dry-run --ignore-installed --only-binary :all: --python-version 3.11 \
  --implementation cp --abi cp311 --platform manylinux_2_17_x86_64 --target "$WORK/pip-target2" \
  --index-url "$URL_html/simple/" --no-cache-dir --quiet --disable-pip-version-check --require-hashes --no-deps \
  -r requirements.lock
run pre "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_main/simple/" -o pre.lock --pre
check "--pre takes pre-releases (pre 2.0b1)" bash -c "test $RC = 0 && grep -q '^pre==2.0b1' pre.lock"

# ---- deterministic, cached, and kept ---------------------------------------------------
n=$(wc -l <main.log)
run again "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_main/simple/" -o again.lock
check "the same input and index give the same bytes" cmp requirements.lock again.lock
tail -n +"$((n + 1))" main.log >relock.log
check "a re-lock on a warm cache fetches no metadata (only index pages)" bash -c \
  "! grep -v ' /simple/' relock.log && grep -q ' /simple/app/' relock.log"
sed -i 's/^util==1.2/util==1.0/' again.lock
cp again.lock kept.lock
run keep "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_main/simple/" -o kept.lock
check "an existing lock's version that still fits is kept (util 1.0)" bash -c \
  "grep -q '^util==1.0' kept.lock && diff <(versions kept.lock | grep -v ^util) <(versions requirements.lock | grep -v ^util)"
echo 'leaf' >>reqs.in
run add "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_main/simple/" -o kept.lock
check "a re-lock after adding a line adds it and changes nothing else" bash -c \
  "diff <(versions kept.lock) <( (versions requirements.lock | sed 's/^util==1.2/util==1.0/'; echo leaf==1.0) | LC_ALL=C sort)"
run upp "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_main/simple/" -o kept.lock -P util
check "-P util moves util to the newest (1.2)" grep -q '^util==1.2' kept.lock
sed -i 's/^util==1.2/util==1.0/; s/^srv==2.0/srv==1.0/' kept.lock
run up "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_main/simple/" -o kept.lock --upgrade
check "--upgrade moves every package (util 1.2; srv 1.0 does not meet web[server]'s srv>=2 anyway)" bash -c \
  "grep -q '^util==1.2' kept.lock && grep -q '^srv==2.0' kept.lock"
sed -i '$d' reqs.in

# ---- no solution: a derivation -----------------------------------------------------------
printf 'app>=3\n' >bad.in
cp requirements.lock bad.lock
run nosol "${LOCK[@]}" bad.in --spec spec.yaml -i "$URL_main/simple/" -o bad.lock
rc_is "app>=3 cannot be met: exit 3" 3 nosol
check "the error is a derivation from the input line to the incompatible pair" bash -c \
  "grep -q 'no set of versions satisfies the requirements' logs/nosol.err &&
   grep -q '(1) because lib 2.0 depends on util>=1' logs/nosol.err &&
   grep -q 'and app 3.0 depends on lib>=2' logs/nosol.err &&
   grep -q 'and bad.in:1 needs app>=3' logs/nosol.err && ! grep -q ResolutionImpossible logs/nosol.err"
check "... and the lock already written is left as it was" cmp requirements.lock bad.lock
printf 'top>=2\n' >chain.in
run chain "${LOCK[@]}" chain.in --spec spec.yaml -i "$URL_main/simple/" -o bad.lock
check "top>=2: every top 2-6 needs a leaf the index lacks, in one derivation" bash -c \
  "test $RC = 3 && grep -q 'chain.in:1 needs top>=2' logs/chain.err && grep -q 'leaf' logs/chain.err"

# ---- the base -----------------------------------------------------------------------------
/usr/bin/python3 "$SUPPORT/make-paddle-base.py" pb24 "$BASE_ROOTFS" 2.4.2 --variant paddle24 >/dev/null
/usr/bin/python3 "$SUPPORT/make-paddle-base.py" pb26 "$BASE_ROOTFS" 2.6.1 >/dev/null
for v in 24 26; do
  printf 'base: oci:pb%s\nlayers:\n  - name: deps\n    wheels: {lock: requirements.lock}\n' "$v" >"b$v.yaml"
done
printf 'protobuf>=4\n' >pb4.in
run pb4 "${LOCK[@]}" pb4.in --spec b24.yaml -i "$URL_main/simple/" -o pb4.lock
rc_is "protobuf>=4 on a Paddle 2.4 base: exit 3" 3 pb4
check "... naming the input line and the base's paddlepaddle-gpu 2.4.2 that keeps protobuf<=3.20.0" bash -c \
  "grep -q \"pb4.in:1 needs protobuf>=4\" logs/pb4.err &&
   grep -q \"the base's paddlepaddle-gpu 2.4.2 constrains protobuf>=3.1.0,<=3.20.0\" logs/pb4.err &&
   test ! -e pb4.lock"
printf 'protobuf\npaddlestub\nneedsnewnumpy\n' >base.in
run base "${LOCK[@]}" base.in --spec b24.yaml -i "$URL_main/simple/" -o base.lock --json
rc_is "a lock on the base" 0 base
check "what the base meets is left out and said so (protobuf 3.20.0, also paddlestub's protobuf<=3.20)" bash -c \
  "! grep -q '^protobuf==' base.lock &&
   grep -q '^#   protobuf==3.20.0 (via base.in:1, paddlestub 2.4.2)' base.lock &&
   grep -q '\"in_base\"' logs/base.out"
check "what it lacks is locked (numpy 1.26.4 for needsnewnumpy and paddlestub)" bash -c \
  "diff <(versions base.lock) <(printf 'needsnewnumpy==1.0\nnumpy==1.26.4\npaddlestub==2.4.2\n')"
printf 'protobuf<4\n' >repl.in
run repl "${LOCK[@]}" repl.in --spec b26.yaml -i "$URL_main/simple/" -o repl.lock
check "a base distribution the input names is replaced where the base's own requirement allows (protobuf 4.25.3 -> 3.20.3, paddlepaddle-gpu 2.6.1 asks >=3.20.2)" \
  bash -c "test $RC = 0 && grep -q '^protobuf==3.20.3' repl.lock"
printf 'protobuf<3.20\n' >old.in
run old "${LOCK[@]}" old.in --spec b26.yaml -i "$URL_main/simple/" -o old.lock
check "... and not where it does not (protobuf<3.20 against >=3.20.2: exit 3 naming paddlepaddle-gpu 2.6.1)" \
  bash -c "test $RC = 3 && grep -q \"the base's paddlepaddle-gpu 2.6.1\" logs/old.err"

# ---- bad input, a bad index -----------------------------------------------------------
printf -- '-r loop-b.in\n' >loop-a.in
printf 'app\n-r loop-a.in\n' >loop-b.in
run loop "${LOCK[@]}" loop-a.in --spec spec.yaml -i "$URL_main/simple/" -o bad.lock
check "a -r loop: exit 3 naming the file and line" bash -c \
  "test $RC = 3 && grep -q 'loop-b.in:2' logs/loop.err"
printf 'app\n--frobnicate\n' >opt.in
run opt "${LOCK[@]}" opt.in --spec spec.yaml -i "$URL_main/simple/" -o bad.lock
check "an unknown option: exit 3 naming opt.in:2" bash -c "test $RC = 3 && grep -q 'opt.in:2' logs/opt.err"
printf 'app >>= 1\n' >mal.in
run mal "${LOCK[@]}" mal.in --spec spec.yaml -i "$URL_main/simple/" -o bad.lock
check "a malformed line: exit 3 naming mal.in:1" bash -c "test $RC = 3 && grep -q 'mal.in:1' logs/mal.err"
run auth "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_auth/simple/" -o bad.lock
rc_is "an index that answers 401: exit 5" 5 auth
run down "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_down/simple/" -o bad.lock --retries 1
check "an index that answers 503 to every try: exit 6 or 7, naming the URL" bash -c \
  "test $RC = 6 -o $RC = 7 && grep -q '127.0.0.1:$PORT_down' logs/down.err"
T0=$SECONDS
run drip "${LOCK[@]}" reqs.in --spec spec.yaml -i "$URL_drip/simple/" -o bad.lock --retries 1 --timeout 1
T1=$SECONDS
check "an index that drips (a byte every 0.5 s): exit 6 within the page deadline, naming the URL and why" bash -c \
  "test $RC = 6 && test $((T1 - T0)) -le 20 && grep -q '127.0.0.1:$PORT_drip' logs/drip.err &&
   grep -qi 'took longer\|too long\|deadline' logs/drip.err"
check "none of them touched the lock already written" cmp requirements.lock bad.lock
printf 'app\n' >lie.in
run lie "$PI" lock --cache-dir "$WORK/lie-cache" -q lie.in --spec spec.yaml -i "$URL_lie/simple/" -o lie.lock
check "lying metadata steers a lock (app 2.0 alone: the .metadata hides lib and util)" bash -c \
  "test $RC = 0 && diff <(versions lie.lock) <(echo app==2.0)"
{
  printf 'image: {name: example.com/res/lie, tags: [v1]}\nbase: scratch\n'
  printf 'python: {version: "3.11", glibc: "2.36"}\nlayers:\n  - name: deps\n    wheels:\n'
  printf '      lock: lie.lock\n      index: %s/simple/\n' "$URL_lie"
} >lie.yaml
run liebuild "$PI" build lie.yaml -q --cache-dir "$WORK/lie-cache" -o oci:lie-out:v1
check "... but the build re-reads the wheel's own METADATA: exit 8, not the metadata the index advertises" bash -c \
  "test $RC = 8 && grep -q 'is not the metadata' logs/liebuild.err && test ! -e lie-out"
finish
