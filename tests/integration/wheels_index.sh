#!/usr/bin/env bash
# Wheels layers from a Python package index: `paddle-image lock` and `build` against
# tests/support/index_server.py (PEP 691 JSON, HTML only, find-links, auth, faults),
# serving the wheels of tests/support/make-index-wheels.py and Debian's pip wheel.
# The image built on the Debian base is unpacked with umoci and run with runc.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
source "$SUPPORT/index_server.sh"
cd "$WORK"

# ---- fixtures: the index wheels (cached), served from two directories -------------
INDEX_WHEELS=$FIXTURES/index-wheels
python3 "$SUPPORT/make-index-wheels.py" "$INDEX_WHEELS" --big-mb 200
pip_whl=$(ls /usr/share/python-wheels/pip-*-py3-none-any.whl | head -1)
PIP_WHL=$(basename "$pip_whl")
PIP_VERSION=${PIP_WHL#pip-}
PIP_VERSION=${PIP_VERSION%%-*}
# served/: everything (with the 200 MiB bigwheel); small/: without it (quick to start).
mkdir -p served small mini logs
for f in "$INDEX_WHEELS"/*.whl "$INDEX_WHEELS"/*.tar.gz; do
  ln -s "$f" served/
  [[ $(basename "$f") == bigwheel-* ]] || ln -s "$f" small/
done
cp "$pip_whl" served/
cp "$pip_whl" small/
cp "$INDEX_WHEELS"/alpha-1.1-py3-none-any.whl mini/ # a second index that has alpha only
sha256sum served/* | sed 's#  served/#  #' >sums.txt

# ---- servers ($SUPPORT/index_server.sh: start_server NAME ROOT [ARGS...]) ---------
start_server main served
start_server html small --no-json
start_server tamper small --tamper alpha-1.0-py3-none-any.whl
start_server yank small --yank alpha-1.1-py3-none-any.whl=broken
start_server auth small --auth user:s3cret
start_server flaky small --fail-first 2 --cut-first 1
start_server mini mini
DEAD_PORT=9 # no listener (discard); never a port another test may take meanwhile

# ---- helpers (run, rc_is: $SUPPORT/index_server.sh) ---------------------------------
lines() { wc -l <"$1"; }                           # lines of a server log
log_since() { tail -n +"$(($2 + 1))" "$1"; }      # LOG N: its lines after the first N
# lock_files LOCK: the served files whose sha256 the lock lists, one per line, sorted
# (a hash of no served file shows as ?HEX).
lock_files() {
  python3 - "$1" "$WORK/sums.txt" <<'PY'
import re, sys
sums = dict(l.split() for l in open(sys.argv[2]))
hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", open(sys.argv[1]).read())
print("\n".join(sorted(sums.get(h, "?" + h) for h in hashes)))
PY
}
sorted_list() { printf '%s\n' "$@" | LC_ALL=C sort; }
# scratch_spec FILE LOCK [YAML...]: a spec on scratch for CPython 3.11 / glibc 2.36 with
# one wheels layer 'deps'; each YAML line goes under `wheels:` after `lock:`.
scratch_spec() {
  local f=$1 lock=$2 l
  shift 2
  {
    printf 'image: {name: example.com/idx/app, tags: [v1]}\nbase: scratch\n'
    printf 'python: {version: "3.11", glibc: "2.36"}\nlayers:\n  - name: deps\n    wheels:\n'
    printf '      lock: %s\n' "$lock"
    for l in "$@"; do printf '      %s\n' "$l"; done
  } >"$f"
}
grep_err() { grep -qE -- "$2" "logs/$1.err"; } # TAG PATTERN
site=usr/local/lib/python3.11/dist-packages
FASTMATH_OK=fastmath-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
MAIN_FILES=$(sorted_list alpha-1.1-py3-none-any.whl beta-2.0-py3-none-any.whl "$FASTMATH_OK" \
  paddlestub-2.6.1-py3-none-any.whl "paddlestub-2.6.1+cu118-py3-none-any.whl" "$PIP_WHL")
printf 'alpha==1.1\nbeta==2.0\nfastmath==1.0\npaddlestub==2.6.1\npip==%s\n' "$PIP_VERSION" >requirements.txt

# ---- the Debian base (as in e2e.sh) ------------------------------------------------
debian_base_spec base.yaml
check "base image builds from the Debian rootfs" "$PI" build base.yaml -q -o oci:base:bookworm

cat >app.yaml <<YAML
image: {name: example.com/idx/app, tags: [v1]}
base: oci:base:bookworm
layers:
  - name: deps
    wheels:
      lock: requirements.lock
      index: $URL_main/simple
YAML
INS_main=(--insecure-registry "127.0.0.1:$PORT_main")

# ==== 1. lock against the JSON (PEP 691) index =======================================
run lock-main "$PI" lock requirements.txt -o requirements.lock --spec app.yaml --cache-dir c-main "${INS_main[@]}"
rc_is "lock against the JSON index" 0 lock-main
check "lock hashes are the sha256sum of the served files (fastmath: cp311 manylinux x86_64 only; paddlestub 2.6.1 and 2.6.1+cu118)" \
  diff <(lock_files requirements.lock) <(echo "$MAIN_FILES")
check "lock keeps the pinned lines as written" diff <(grep -E '^[A-Za-z]' requirements.lock | sed 's/ *\\$//') requirements.txt
check "the JSON index was asked for JSON (PEP 691) and PEP 658 metadata" grep -q "^GET /files/beta-2.0-py3-none-any.whl.metadata 200" main.log
run lock-all "$PI" lock requirements.txt -o all.lock --all-platforms --spec app.yaml --cache-dir c-main "${INS_main[@]}"
rc_is "lock --all-platforms" 0 lock-all
check "--all-platforms hashes all 5 fastmath wheels (not the sdist)" \
  diff <(lock_files all.lock | grep '^fastmath') <(cd served && ls fastmath-1.0-*.whl | LC_ALL=C sort)
check "--all-platforms: the other lines are unchanged" \
  diff <(lock_files all.lock | grep -v '^fastmath') <(echo "$MAIN_FILES" | grep -v '^fastmath')
run lock-again "$PI" lock requirements.txt -q -o again.lock --spec app.yaml --cache-dir c-main "${INS_main[@]}"
check "lock re-run is byte-identical" cmp requirements.lock again.lock
run lock-relock "$PI" lock requirements.lock -q -o relock.lock --spec app.yaml --cache-dir c-main "${INS_main[@]}"
check "lock of the lock itself gives the same requirement and hash lines (round trip)" \
  diff <(grep -v '^ *#' requirements.lock) <(grep -v '^ *#' relock.lock)
run lock-json "$PI" lock requirements.txt --json --spec app.yaml --cache-dir c-main "${INS_main[@]}"
check "lock --json to stdout carries the lock text" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["lock"] == open(sys.argv[2]).read(), "lock text differs"
assert j["index_from"] == "the spec'"'"'s wheels.index", j["index_from"]
assert [l["name"] for l in j["lines"]] == ["alpha", "beta", "fastmath", "paddlestub", "pip"], j["lines"]' \
  logs/lock-json.out requirements.lock

# A line whose marker excludes the target need not exist on the index (pip ignores it
# there); where the marker includes the target, a line without hashes is refused.
printf 'alpha==1.1\nnosuchpkg==1.0 ; sys_platform == "win32"\n' >marker-req.txt
run lock-marker "$PI" lock marker-req.txt -o marker.lock --spec app.yaml --cache-dir c-main "${INS_main[@]}"
rc_is "lock: a requirement whose marker excludes the target need not be on the index" 0 lock-marker
check "... written as it is, without hashes, with a warning" bash -c \
  "grep -qx 'nosuchpkg==1.0 ; sys_platform == \"win32\"' marker.lock && grep -q 'marker excludes the target' logs/lock-marker.err"
scratch_spec marker.yaml marker.lock "index: $URL_main/simple"
run build-marker "$PI" build marker.yaml -q -o oci:marker:v1 --cache-dir c-main "${INS_main[@]}"
rc_is "build with that lock installs what applies" 0 build-marker
sed 's/"win32"/"linux"/' marker.lock >marker-linux.lock
scratch_spec marker-linux.yaml marker-linux.lock "index: $URL_main/simple"
run build-marker-linux "$PI" build marker-linux.yaml -q -o oci:marker2:v1 --cache-dir c-main "${INS_main[@]}"
rc_is "a hashless line whose marker includes the target is refused (exit 3, input)" 3 build-marker-linux
check "... naming the line and the target" grep_err build-marker-linux \
  "marker-linux.lock:[0-9]+: 'nosuchpkg==1.0 ; sys_platform == \"linux\"' has no --hash=sha256:, and its marker includes CPython 3.11"

# ==== 2. build on the Debian base, run in a container ================================
n=$(lines main.log)
run build-main "$PI" build app.yaml -o oci:img:v1 --cache-dir c-main "${INS_main[@]}" --metadata-file meta.json
rc_is "build on the Debian base accepts the lock" 0 build-main
check "build downloaded paddlestub 2.6.1+cu118 (highest match of ==2.6.1), never .post118" \
  bash -c "log=\$(tail -n +$((n + 1)) main.log); grep -q 'GET /files/paddlestub-2.6.1%2Bcu118-py3-none-any.whl 200' <<<\"\$log\" && ! grep -q 'post118' <<<\"\$log\" && ! grep -q 'paddlestub-2.6.1-py3' <<<\"\$log\""
check "wheel blobs kept in the cache under their sha256" bash -c \
  "for f in alpha-1.1-py3-none-any.whl $PIP_WHL; do test -f c-main/blobs/sha256/\$(sha256sum served/\$f | cut -d' ' -f1) || exit 1; done"
check "cache blobs are intact" blobs_intact c-main
check "metadata lists the installed wheels" python3 -c '
import json, sys
w = {x["name"]: x for x in json.load(open("meta.json"))["wheels"]}
assert {"alpha", "beta", "fastmath", "paddlestub", "pip"} <= set(w), sorted(w)' 
check "umoci unpack" umoci unpack --image img:v1 bundle
check "wheels land in Debian's dist-packages" test -d "bundle/rootfs/$site/paddlestub"
out=$(run_in_bundle bundle python3 -c 'import alpha, beta, fastmath, paddlestub; print(paddlestub.__version__, fastmath.TAG)' 2>&1) || true
check "imports in the container: paddlestub 2.6.1+cu118, fastmath cp311 manylinux x86_64" \
  grep -qx "2.6.1+cu118 cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64" <<<"$out"
out=$(run_in_bundle bundle beta-cli 2>&1) || true
check "console script beta-cli runs" grep -qx "beta ok" <<<"$out"
out=$(run_in_bundle bundle python3 -m pip check 2>&1) || true
check "pip check passes in the container" grep -q "No broken requirements found" <<<"$out"
out=$(run_in_bundle bundle python3 -m pip --version 2>&1) || true
check "pip from the index runs in the container" grep -q "^pip $PIP_VERSION " <<<"$out"

# ==== 3. a second build with the same cache makes no request ==========================
n=$(lines main.log)
run build-again "$PI" build app.yaml -o oci:img2:v1 --cache-dir c-main "${INS_main[@]}"
rc_is "second build (new output, same cache)" 0 build-again
check "second build made zero requests to the index" test "$(lines main.log)" -eq "$n"
check "second build gives the same image" test "$(manifest_digest img2 v1)" = "$(manifest_digest img v1)"

# ==== 4. HTML-only index, find-links page only ======================================
scratch_spec html.yaml html.lock "index: $URL_html/simple"
run lock-html "$PI" lock requirements.txt -o html.lock --spec html.yaml --cache-dir c-html --insecure-registry "127.0.0.1:$PORT_html"
rc_is "lock against an HTML-only index (fresh cache)" 0 lock-html
check "HTML index: the same hashes as from the JSON index" diff <(lock_files html.lock) <(echo "$MAIN_FILES")
run build-html "$PI" build html.yaml -o oci:html:v1 --cache-dir c-html2 --insecure-registry "127.0.0.1:$PORT_html"
rc_is "build from an HTML-only index (fresh cache)" 0 build-html
check "HTML build fetched the wheels" grep -q "^GET /files/$FASTMATH_OK 200" html.log

printf -- '--no-index\nalpha==1.1\nbeta==2.0\nfastmath==1.0\n' >fl-req.txt
scratch_spec fl.yaml fl.lock "find_links: [$URL_main/find-links.html]"
n=$(lines main.log)
run lock-fl "$PI" lock fl-req.txt -o fl.lock --spec fl.yaml --cache-dir c-fl "${INS_main[@]}"
rc_is "lock with a find-links page only (--no-index)" 0 lock-fl
check "find-links lock keeps --no-index" grep -qx -- "--no-index" fl.lock
check "find-links lock hashes" diff <(lock_files fl.lock) \
  <(sorted_list alpha-1.1-py3-none-any.whl beta-2.0-py3-none-any.whl "$FASTMATH_OK")
n2=$(lines main.log)
run build-fl "$PI" build fl.yaml -o oci:fl:v1 --cache-dir c-fl "${INS_main[@]}"
rc_is "build with a find-links page only" 0 build-fl
check "--no-index: no /simple/ request at all" bash -c "! tail -n +$((n + 1)) main.log | grep -q ' /simple'"
check "build after lock with the same cache downloads no wheel" bash -c "! tail -n +$((n2 + 1)) main.log | grep -q ' /files/'"
check "find-links image has the wheels" bash -c "umoci unpack --image fl:v1 fl-bundle >/dev/null && test -d fl-bundle/rootfs/$site/alpha && test -d fl-bundle/rootfs/$site/fastmath"

# ==== 5. a tampered mirror ==========================================================
scratch_spec t-lockspec.yaml t.lock "index: $URL_main/simple"
scratch_spec tamper.yaml t.lock "index: $URL_tamper/simple"
echo 'alpha==1.0' >t-req.txt
run lock-t "$PI" lock t-req.txt -q -o t.lock --spec t-lockspec.yaml --cache-dir c-tlock "${INS_main[@]}"
rc_is "lock alpha==1.0 from the good index" 0 lock-t
TAMPERED_SHA=$(curl -sS --noproxy '*' "$URL_tamper/files/alpha-1.0-py3-none-any.whl" | sha256sum | cut -d' ' -f1)
check "the mirror does serve other bytes" test "$TAMPERED_SHA" != "$(grep -o '[0-9a-f]\{64\}' t.lock)"
run build-t "$PI" build tamper.yaml -o oci:t:v1 --cache-dir c-tamper --insecure-registry "127.0.0.1:$PORT_tamper"
rc_is "tampered download: exit 8" 8 build-t
check "the error names the file and its sha256" \
  bash -c "grep -q 'alpha-1.0-py3-none-any.whl' logs/build-t.err && grep -q 'sha256' logs/build-t.err && grep -q '$TAMPERED_SHA' logs/build-t.err"
check "no blob of the tampered bytes in the cache" test ! -e "c-tamper/blobs/sha256/$TAMPERED_SHA"
check "no file anywhere in the cache holds the tampered bytes" \
  bash -c "! find c-tamper -type f -exec sha256sum {} + | grep -q '^$TAMPERED_SHA '"
check "no image written" test ! -e t/index.json

# ==== 6. versions and platforms the target cannot use =================================
scratch_spec s311.yaml x.lock "index: $URL_main/simple"
scratch_spec s312.yaml x.lock "index: $URL_main/simple"
sed -i 's/version: "3.11", glibc: "2.36"/version: "3.12"/' s312.yaml
lock_main() { "$PI" lock "$1" -o x.lock --spec "${2:-s311.yaml}" --cache-dir c-misc "${INS_main[@]}"; }
echo 'alpha==9.9' >r-missing.txt
expect_fail "version not on the index: exit 9, r-missing.txt:1" 9 "r-missing.txt:1" lock_main r-missing.txt
check "... lists the available versions" bash -c "grep -q '1\.0' $WORK/err.txt && grep -q '1\.1' $WORK/err.txt && grep -q '2\.0rc1' $WORK/err.txt"
echo 'fastmath==1.0' >r-fastmath.txt
expect_fail "no fastmath wheel for CPython 3.12: exit 9" 9 "fastmath" lock_main r-fastmath.txt s312.yaml
check "... each file refused, musllinux and the sdist included" \
  bash -c "grep -q musllinux $WORK/err.txt && grep -q 'source distribution' $WORK/err.txt && grep -q macosx $WORK/err.txt && grep -q aarch64 $WORK/err.txt && grep -q cp310 $WORK/err.txt"
# The same for CPython 3.11 from a local find-links directory without the fitting wheel.
mkdir -p misfits
for f in served/fastmath-1.0[-.]*; do [[ $f == *"$FASTMATH_OK" ]] || cp -L "$f" misfits/; done
printf -- '--no-index\n-f misfits\nfastmath==1.0\n' >r-misfits.txt
scratch_spec s311-bare.yaml x.lock # no spec index: it would take precedence over --no-index
expect_fail "no fastmath wheel for CPython 3.11 in a find-links directory: exit 9" 9 "r-misfits.txt:3" \
  lock_main r-misfits.txt s311-bare.yaml
check "... why: musllinux, macosx, aarch64, cp310, sdist (one line each)" python3 - "$WORK/err.txt" <<'PY'
import re, sys
err = open(sys.argv[1]).read()
for f in ["fastmath-1.0-cp311-cp311-musllinux_1_1_x86_64.whl", "fastmath-1.0-cp311-cp311-macosx_11_0_arm64.whl",
          "fastmath-1.0-cp311-abi3-manylinux_2_17_aarch64.whl",
          "fastmath-1.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "fastmath-1.0.tar.gz"]:
    m = re.search(re.escape(f) + r": (.+)", err)
    assert m and len(m.group(1)) > 10, f"{f} not explained"
assert "source distribution" in err and "no build step" in err
PY
echo 'onlysdist==1.0' >r-sdist.txt
expect_fail "sdist-only project: exit 9 'source distribution'" 9 "source distribution" lock_main r-sdist.txt
echo 'requirespy==1.0' >r-reqpy.txt
expect_fail "Requires-Python >=3.12 on 3.11: exit 9 'requires Python'" 9 "requires Python" lock_main r-reqpy.txt

scratch_spec yank.yaml yank.lock "index: $URL_yank/simple"
echo 'alpha==1.1' >r-yank.txt
run lock-yank "$PI" lock r-yank.txt -o yank.lock --spec yank.yaml --cache-dir c-yank --insecure-registry "127.0.0.1:$PORT_yank"
rc_is "yanked file pinned exactly: lock succeeds" 0 lock-yank
check "... with a warning that it is yanked" grep_err lock-yank "warning.*yanked"
run build-yank "$PI" build yank.yaml -o oci:yank:v1 --cache-dir c-yank --insecure-registry "127.0.0.1:$PORT_yank"
rc_is "yanked file: build succeeds" 0 build-yank
check "... with a warning that it is yanked" grep_err build-yank "warning.*yanked"

# ==== 7. basic auth ==================================================================
INS_auth=(--insecure-registry "127.0.0.1:$PORT_auth")
AUTH_URL=http://user:s3cret@127.0.0.1:$PORT_auth/simple
printf 'alpha==1.1\nbeta==2.0\n' >auth-req.txt
scratch_spec auth-none.yaml auth.lock "index: $URL_auth/simple"
scratch_spec auth-url.yaml auth.lock "index: $AUTH_URL"
run auth-lock-none "$PI" lock auth-req.txt -o auth-none.lock --spec auth-none.yaml --cache-dir c-auth0 "${INS_auth[@]}"
rc_is "auth: lock without credentials: exit 5" 5 auth-lock-none
run auth-lock "$PI" lock auth-req.txt -o auth.lock --spec auth-url.yaml --cache-dir c-auth1 "${INS_auth[@]}" --json
rc_is "auth: lock with credentials in the URL" 0 auth-lock
run auth-build-none "$PI" build auth-none.yaml -o oci:auth0:v1 --cache-dir c-auth0 "${INS_auth[@]}"
rc_is "auth: build without credentials: exit 5" 5 auth-build-none
run auth-build-url "$PI" build auth-url.yaml -vvv -o oci:auth1:v1 --cache-dir c-auth1 "${INS_auth[@]}" --metadata-file auth-url.json
rc_is "auth: build with credentials in the URL (-vvv)" 0 auth-build-url
printf 'machine 127.0.0.1\nlogin user\npassword s3cret\n' >auth.netrc
run auth-build-netrc env NETRC="$WORK/auth.netrc" "$PI" build auth-none.yaml -o oci:auth2:v1 --cache-dir c-auth2 \
  "${INS_auth[@]}" --metadata-file auth-netrc.json
rc_is "auth: build with credentials from \$NETRC" 0 auth-build-netrc
run auth-lock-netrc env NETRC="$WORK/auth.netrc" "$PI" lock auth-req.txt -o auth-netrc.lock --spec auth-none.yaml \
  --cache-dir c-auth3 "${INS_auth[@]}"
rc_is "auth: lock with credentials from \$NETRC" 0 auth-lock-netrc
check "auth: the password appears in no output, lock or metadata" \
  bash -c "! grep -l s3cret logs/auth-*.out logs/auth-*.err auth.lock auth-netrc.lock auth-url.json auth-netrc.json"
check "auth: the images do not carry the password" bash -c "! grep -rl s3cret auth1 auth2"
# Credentials given in the requirements' -i line are not copied into the lock.
printf -- '-i %s\nalpha==1.1\n' "$AUTH_URL" >auth-req-i.txt
scratch_spec auth-bare.yaml auth-i.lock
run auth-lock-i "$PI" lock auth-req-i.txt -o auth-i.lock --spec auth-bare.yaml --cache-dir c-auth4 "${INS_auth[@]}"
rc_is "auth: lock with credentials in the requirements' -i line" 0 auth-lock-i
check "auth: the lock written from it does not carry the password" \
  bash -c "! grep -l s3cret auth-i.lock logs/auth-lock-i.out logs/auth-lock-i.err"

# A loopback index is a secure origin (as pip counts localhost, 127.0.0.0/8 and ::1),
# decided from the literal host: no flag. Any other plain-HTTP index is refused without
# --insecure-registry / --insecure, before a request, so credentials never go out over
# plain HTTP: checked in a network namespace whose lo also holds 10.200.0.1.
run loopback-lock "$PI" lock requirements.txt -o loopback.lock --spec app.yaml --cache-dir c-plain
rc_is "a plain-HTTP index on 127.0.0.1 needs no flag" 0 loopback-lock
check "... and locks the same as with the flag" cmp loopback.lock requirements.lock
scratch_spec ns.yaml ns.lock "index: http://alice:s3cret@10.200.0.1:18081/simple"
RC=0
in_netns_with_server 10.200.0.1 18081 "$WORK/ns-index.log" "$PI" lock requirements.txt -o ns.lock --spec ns.yaml \
  --cache-dir c-plain2 >logs/ns-lock.out 2>logs/ns-lock.err || RC=$?
rc_is "a plain-HTTP index on a non-loopback host without the flag: refused (exit 3)" 3 ns-lock
check "... naming the flag, the password hidden" bash -c \
  "grep -q -- '--insecure-registry 10.200.0.1:18081' logs/ns-lock.err && ! grep -q s3cret logs/ns-lock.err"
check "... before any request" bash -c "! grep -q 'GET ' '$WORK/ns-index.log'"
run insecure-all "$PI" lock auth-req.txt -q -o insecure.lock --spec html.yaml --cache-dir c-ins --insecure
rc_is "--insecure allows every plain-HTTP index" 0 insecure-all

# ==== 8. a flaky index: 503s, cut transfers ==========================================
scratch_spec flaky.yaml html.lock "index: $URL_flaky/simple"
run build-flaky "$PI" build flaky.yaml -o oci:flaky:v1 --cache-dir c-flaky --insecure-registry "127.0.0.1:$PORT_flaky"
rc_is "flaky index (2x 503 per path, first transfer cut): build succeeds" 0 build-flaky
check "flaky: the log shows the 503s" grep -q '^GET /files/[^ ]* 503 ' flaky.log
check "flaky: a cut transfer was resumed with Range bytes=N-" grep -qE '^GET /files/[^ ]+ 206 [0-9]+ bytes=[0-9]+-$' flaky.log
check "flaky: the resumed pip download starts where the cut one stopped" python3 - flaky.log "$PIP_WHL" "$(stat -L -c %s "served/$PIP_WHL")" <<'PY'
import sys
log, name, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
got = [l.split() for l in open(log) if l.startswith(f"GET /files/{name} ")]
cut = [int(g[3]) for g in got if g[2] == "200"]
rng = [g[4] for g in got if g[2] == "206"]
assert cut == [size // 2], got
assert rng == [f"bytes={size // 2}-"], got
PY
check "flaky: the same layer as from the healthy index" diff <(layer_digests flaky v1) <(layer_digests html v1)
check "flaky: cache blobs intact" blobs_intact c-flaky

# ==== 9. dependency closure =========================================================
echo 'needsdelta==1.0' >r-delta.txt
expect_fail "closure: needsdelta without delta: exit 3" 3 "needsdelta" lock_main r-delta.txt
check "... names delta" grep -qE '(^|[^a-z])delta([^a-z]|$)' "$WORK/err.txt"
# A pinned line's requirements are resolved into the lock, each saying who needs it.
echo 'beta==2.0' >r-beta.txt
run lock-beta lock_main r-beta.txt
rc_is "closure: beta alone: the lock adds what it requires" 0 lock-beta
check "... alpha, via beta 2.0" bash -c "grep -q '^alpha==' x.lock && grep -A3 '^alpha==' x.lock | grep -q '# via beta 2.0'"
printf 'beta[fast]==2.0\nalpha==1.1\n' >r-extra.txt
run lock-extra lock_main r-extra.txt
rc_is "closure: beta[fast]: the lock adds what the extra requires" 0 lock-extra
check "... gamma, via beta[fast] 2.0" bash -c "grep -q '^gamma==' x.lock && grep -A3 '^gamma==' x.lock | grep -q '# via beta\[fast\] 2.0'"
printf 'beta==2.0 \\\n    --hash=sha256:%s\n' "$(sha256sum served/beta-2.0-py3-none-any.whl | cut -d' ' -f1)" >beta-only.lock
scratch_spec beta-only.yaml beta-only.lock "index: $URL_main/simple"
expect_fail "closure at build time: beta-only lock: exit 3 naming alpha" 3 "alpha" \
  "$PI" build beta-only.yaml -o oci:b:v1 --cache-dir c-misc "${INS_main[@]}"
check "... and beta" grep -q "beta" "$WORK/err.txt"

# ==== 10. bad locks ==================================================================
HEX64=$(printf 'a%.0s' {1..64})
printf 'alpha==1.1 \\\n    --hash=sha256:%s\nalpha>=1.0 --hash=sha256:%s\n' \
  "$(sha256sum served/alpha-1.1-py3-none-any.whl | cut -d' ' -f1)" "$HEX64" >unpinned.lock
scratch_spec unpinned.yaml unpinned.lock "index: $URL_main/simple"
expect_fail "build: unpinned lock line: exit 3 with FILE:LINE" 3 "unpinned.lock:3" \
  "$PI" build unpinned.yaml -o oci:u:v1 --cache-dir c-misc "${INS_main[@]}"
printf 'alpha==1.1\n' >hashless.lock
scratch_spec hashless.yaml hashless.lock "index: $URL_main/simple"
expect_fail "build: pinned line without a hash: exit 3" 3 "hashless.lock:1" \
  "$PI" build hashless.yaml -o oci:u:v1 --cache-dir c-misc "${INS_main[@]}"
scratch_spec nolock.yaml does-not-exist.lock "index: $URL_main/simple"
expect_fail "build: missing lock file: exit 3 naming paddle-image lock" 3 "paddle-image lock" \
  "$PI" build nolock.yaml -o oci:u:v1 --cache-dir c-misc "${INS_main[@]}"
printf 'alpha==1.1\nalpha>=1.0 --hash=sha256:%s\n' "$HEX64" >r-unpinned.txt
expect_fail "lock: unpinned requirement: exit 3 with FILE:LINE" 3 "r-unpinned.txt:2" lock_main r-unpinned.txt

# ==== 11. defaults: PIP_INDEX_URL, pip.conf, the lock's -i, extra indexes, find-links ====
scratch_spec noindex.yaml dflt.lock
printf 'alpha==1.1\nbeta==2.0\n' >dflt-req.txt
run dflt-lock env PIP_INDEX_URL="$URL_main/simple" "$PI" lock dflt-req.txt -o dflt.lock --spec noindex.yaml --cache-dir c-d1 "${INS_main[@]}" --json
rc_is "PIP_INDEX_URL: lock uses it" 0 dflt-lock
check "... and says so" grep -q '"index_from": "PIP_INDEX_URL"' logs/dflt-lock.out
run dflt-build env PIP_INDEX_URL="$URL_main/simple" "$PI" build noindex.yaml -o oci:d1:v1 --cache-dir c-d1b "${INS_main[@]}"
rc_is "PIP_INDEX_URL: build uses it" 0 dflt-build
scratch_spec withindex.yaml dflt.lock "index: $URL_main/simple"
run dflt-beats env PIP_INDEX_URL="http://127.0.0.1:$DEAD_PORT/simple" "$PI" build withindex.yaml -o oci:d2:v1 --cache-dir c-d2 \
  "${INS_main[@]}" --insecure-registry "127.0.0.1:$DEAD_PORT"
rc_is "spec index beats PIP_INDEX_URL (a dead port)" 0 dflt-beats
printf '[global]\nindex-url = %s/simple\n' "$URL_main" >pip.conf
run dflt-conf env PIP_CONFIG_FILE="$WORK/pip.conf" "$PI" build noindex.yaml -o oci:d3:v1 --cache-dir c-d3 "${INS_main[@]}"
rc_is "pip.conf (PIP_CONFIG_FILE, [global] index-url) is used" 0 dflt-conf
printf -- '-i %s/simple\n-r dflt-req.txt\n' "$URL_main" >dflt-i.txt
run dflt-i env PIP_INDEX_URL="http://127.0.0.1:$DEAD_PORT/simple" "$PI" lock dflt-i.txt -o dflt-i.lock --spec noindex.yaml \
  --cache-dir c-d4 "${INS_main[@]}"
rc_is "the requirements' -i line (with an -r include) beats PIP_INDEX_URL" 0 dflt-i
check "... both included requirements locked, the -i line kept" \
  bash -c "grep -qx -- '--index-url $URL_main/simple' dflt-i.lock && grep -q '^alpha==1.1' dflt-i.lock && grep -q '^beta==2.0' dflt-i.lock"
run dflt-extra env PIP_INDEX_URL="$URL_mini/simple" PIP_EXTRA_INDEX_URL="$URL_main/simple" "$PI" lock dflt-req.txt -o dflt-x.lock \
  --spec noindex.yaml --cache-dir c-d5 --insecure
rc_is "PIP_EXTRA_INDEX_URL adds an index (beta only there)" 0 dflt-extra
check "... same hashes" diff <(lock_files dflt-x.lock) <(lock_files dflt.lock)
printf -- '--no-index\nalpha==1.1\nbeta==2.0\n' >dflt-fl.txt
scratch_spec noindex-fl.yaml dflt-fl.lock
run dflt-fl env PIP_FIND_LINKS="$URL_main/find-links.html" "$PI" lock dflt-fl.txt -o dflt-fl.lock --spec noindex-fl.yaml \
  --cache-dir c-d6 "${INS_main[@]}"
rc_is "PIP_FIND_LINKS (a page) with --no-index: lock" 0 dflt-fl
run dflt-fl-build env PIP_FIND_LINKS="$WORK/small" "$PI" build noindex-fl.yaml -o oci:d6:v1 --cache-dir c-d7
rc_is "PIP_FIND_LINKS (a directory) with --no-index: build" 0 dflt-fl-build

# ==== 12. memory: a 200 MiB stored wheel ============================================
echo 'bigwheel==1.0' >big-req.txt
scratch_spec big.yaml big.lock "index: $URL_main/simple"
run lock-big "$PI" lock big-req.txt -o big.lock --spec big.yaml --cache-dir c-big "${INS_main[@]}"
rc_is "lock bigwheel" 0 lock-big
n=$(lines main.log)
run build-big python3 -c '
import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)  # KiB
sys.exit(rc)' "$PI" build big.yaml -q -o oci:big:v1 --cache-dir c-big "${INS_main[@]}"
rc_is "build with the 200 MiB wheel" 0 build-big
BIGSIZE=$(stat -L -c %s served/bigwheel-1.0-py3-none-any.whl)
check "the 200 MiB wheel was downloaded whole" grep -q "^GET /files/bigwheel-1.0-py3-none-any.whl 200 $BIGSIZE " <(log_since main.log "$n")
RSS_KIB=$(tail -1 logs/build-big.out)
check "peak RSS of the build < 100 MB (got ${RSS_KIB} KiB)" test "$RSS_KIB" -lt 97656
check "the big wheel is in the cache under its sha256" \
  test "$(stat -c %s "c-big/blobs/sha256/$(grep -o '[0-9a-f]\{64\}' big.lock)")" -eq "$BIGSIZE"

# ==== 13. a hostile or redirecting index (the fault proxy in front of `small`) =========
source "$SUPPORT/registry/registry.sh"
trap 'stop_servers; registry_stop_all' EXIT
proxy_start ip "127.0.0.1:$PORT_html" "$WORK/proxy"
INS_ip=(--insecure-registry "$IP_HOST")
GAMMA=$(sha256sum small/gamma-0.5-py3-none-any.whl | cut -d' ' -f1)
# /simple/xredir/ lists gamma's wheel (another project's), once under its own name and
# once with the anchor text of the project asked for.
page="<html><body><a href=\\\"$URL_html/files/gamma-0.5-py3-none-any.whl#sha256=$GAMMA\\\">gamma-0.5-py3-none-any.whl</a>"
page+="<a href=\\\"$URL_html/files/gamma-0.5-py3-none-any.whl#sha256=$GAMMA\\\">xredir-0.5-py3-none-any.whl</a></body></html>"
proxy_rules ip "{\"method\": \"GET\", \"path\": \"^/simple/xredir/\", \"action\": \"status\", \"code\": 200, \"times\": -1, \"headers\": {\"Content-Type\": \"text/html\"}, \"body\": \"$page\"}"
echo 'xredir==0.5' >xredir.txt
scratch_spec xredir.yaml xredir.lock
run xredir "$PI" lock xredir.txt -o xredir.lock --spec xredir.yaml -i "$IP_URL/simple" --cache-dir c-x "${INS_ip[@]}" -v
rc_is "a page that lists only another project's wheel has no file for the project: exit 9" 9 xredir
check "... and says so (the other project's file ignored)" grep_err xredir "gamma-0.5-py3-none-any.whl belongs to project 'gamma', not xredir"
check "... no lock was written, gamma's hash pinned nowhere" bash -c "! grep -qs '$GAMMA' xredir.lock"
# A 301 from /redir/simple/gamma/ to /simple/gamma/: relative links resolve against the
# page the answer came from.
proxy_rules ip "{\"method\": \"GET\", \"path\": \"^/redir/simple/gamma/\", \"action\": \"status\", \"code\": 301, \"times\": -1, \"headers\": {\"Location\": \"$IP_URL/simple/gamma/\"}}"
echo 'gamma==0.5' >redir.txt
scratch_spec redir.yaml redir.lock
run redir "$PI" lock redir.txt -o redir.lock --spec redir.yaml -i "$IP_URL/redir/simple" --cache-dir c-r "${INS_ip[@]}"
rc_is "an index page behind a 301 locks (its relative links resolve against the target)" 0 redir
check "... with gamma's hash" grep -q "$GAMMA" redir.lock
# A repeatable option takes one value per occurrence: the requirements file after
# --insecure-registry HOST is the positional (issue 24, item 4).
run order "$PI" lock --spec redir.yaml -i "$IP_URL/redir/simple" --insecure-registry "$IP_HOST" redir.txt -o order.lock \
  --cache-dir c-r --json
rc_is "options before the positional: lock --insecure-registry HOST FILE" 0 order
check "... and the report names -i as where the index came from" grep -q '"index_from": "-i/--index-url"' logs/order.out
check "... the same lock" cmp order.lock redir.lock
# A link whose text names another file than its URL is ignored (stricter than pip).
page="<html><body><a href=\\\"$URL_html/files/gamma-0.5-py3-none-any.whl#sha256=$GAMMA\\\">gamma-0.6-py3-none-any.whl</a></body></html>"
proxy_rules ip "{\"method\": \"GET\", \"path\": \"^/named/simple/gamma/\", \"action\": \"status\", \"code\": 200, \"times\": -1, \"headers\": {\"Content-Type\": \"text/html\"}, \"body\": \"$page\"}"
run named "$PI" lock redir.txt -o named.lock --spec redir.yaml -i "$IP_URL/named/simple" --cache-dir c-n "${INS_ip[@]}" -v
rc_is "a link whose text names another file than its URL is ignored: no file left (exit 9)" 9 named
check "... and -v names both" grep_err named "a link names gamma-0.6-py3-none-any.whl but leads to gamma-0.5-py3-none-any.whl: ignored"
# PEP 658: the page advertises, and the index serves, metadata other than the wheel's
# own. The lock closes over what was advertised; the build, holding the wheel, refuses.
META_SHA=$(printf 'Metadata-Version: 2.1\nName: gamma\nVersion: 0.5\n' | sha256sum | cut -d' ' -f1)
page="<html><body><a href=\\\"$IP_URL/files/gamma-0.5-py3-none-any.whl#sha256=$GAMMA\\\" data-dist-info-metadata=\\\"sha256=$META_SHA\\\">gamma-0.5-py3-none-any.whl</a></body></html>"
proxy_rules ip "{\"method\": \"GET\", \"path\": \"^/m658/simple/gamma/\", \"action\": \"status\", \"code\": 200, \"times\": -1, \"headers\": {\"Content-Type\": \"text/html\"}, \"body\": \"$page\"}
{\"method\": \"GET\", \"path\": \"^/files/gamma-0.5-py3-none-any.whl.metadata\", \"action\": \"status\", \"code\": 200, \"times\": -1, \"body\": \"Metadata-Version: 2.1\\nName: gamma\\nVersion: 0.5\\n\"}"
scratch_spec m658.yaml m658.lock "index: $IP_URL/m658/simple"
run m658-lock "$PI" lock redir.txt -o m658.lock --spec m658.yaml --cache-dir c-m "${INS_ip[@]}"
rc_is "lock over PEP 658 metadata that matches its advertised hash" 0 m658-lock
run m658-build "$PI" build m658.yaml -q -o oci:m658:v1 --cache-dir c-m "${INS_ip[@]}"
rc_is "the build refuses a wheel whose METADATA is not the advertised metadata (exit 8)" 8 m658-build
check "... naming the file and the page" grep_err m658-build "gamma-0.5-py3-none-any.whl: its METADATA \\(sha256 [0-9a-f]{64}\\) is not the metadata .*/m658/simple/gamma/ advertises"

finish
