#!/usr/bin/env bash
# SIGINT and SIGTERM in the middle of a transfer: build, push, pull, copy, warm export
# and lock each run through fault_proxy.py with a `throttle` rule, are signalled once
# the proxy logs that the throttled transfer is under way (no sleeps decide when), and
# must exit 130 (SIGINT) or 143 (SIGTERM) within seconds, name the signal, leave no
# temporary file (layout .tmp, `.NAME.tmp-*` beside an output, the cache's staging and
# blob temporaries), DELETE an open upload session, and let the same command succeed
# when run again. A run killed with SIGKILL leaves pid-stamped temporaries that the next
# run removes, while a live concurrent run's are kept.
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
cd "$WORK"
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
export PIP_CONFIG_FILE=/dev/null

INDEX_PID=
cleanup() {
  if [[ -n $INDEX_PID ]]; then kill "$INDEX_PID" 2>/dev/null || true; fi
  registry_stop_all
}
trap cleanup EXIT

# ---- an image of two 4 MiB layers (16 s each at the throttled rate) ----------------
two_layer_image example.com/sig/app 4
registry_start reg open "$WORK/srv"
proxy_start fp "$REG_HOST" "$WORK/srv"
"$PI" push oci:img:v1 "$REG_HOST/sig/img:v1" --insecure -q >/dev/null

RATE=262144 # bytes/s through a throttle rule
throttle() { # METHOD PATH_REGEX: every matching request is throttled until the next rules
  proxy_rules fp "{\"method\": \"$1\", \"path\": \"$2\", \"action\": \"throttle\", \"rate\": $RATE, \"after_bytes\": 65536, \"times\": -1}"
}

# interrupt TAG SIGNAL CMD...: runs CMD in the background, waits for the proxy's
# "throttled:" line, sends SIGNAL, and waits for the exit (RC; stderr in TAG.err).
interrupt() {
  local tag=$1 sig=$2 i n pid
  shift 2
  n=$(grep -c 'throttled:' "$FP_PLOG" || true)
  # Job control on: a non-interactive shell starts background jobs with SIGINT
  # ignored, which paddle-image (like any well-behaved program) leaves ignored.
  set -m
  "$@" >"$tag.out" 2>"$tag.err" &
  pid=$!
  set +m
  for ((i = 0; i < 600; i++)); do
    (($(grep -c 'throttled:' "$FP_PLOG" || true) > n)) && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! kill -0 "$pid" 2>/dev/null; then
    RC=0
    wait "$pid" || RC=$?
    echo "$tag: finished (exit $RC) before the transfer was throttled: $(tail -3 "$tag.err")"
    RC=-1
    return
  fi
  SIGNALLED_AT=$(date +%s)
  kill "-$sig" "$pid"
  RC=0
  wait "$pid" || RC=$?
  STOP_S=$(($(date +%s) - SIGNALLED_AT))
}
# stopped TAG WANT_RC: the command exited WANT_RC within 10 s of the signal and said why.
stopped() {
  local want_word="interrupted (SIGINT)"
  [[ $2 -eq 143 ]] && want_word="terminated (SIGTERM)"
  [[ $RC -eq $2 ]] || { echo "$1: exit $RC, wanted $2: $(tail -3 "$1.err")"; return 1; }
  ((STOP_S <= 10)) || { echo "$1: took $STOP_S s to stop"; return 1; }
  grep -qF "$want_word" "$1.err" || { echo "$1: stderr does not say $want_word: $(tail -3 "$1.err")"; return 1; }
}
# no_temps DIR...: no temporary file or directory anywhere under the DIRs.
no_temps() {
  local found
  found=$(find "$@" \( -name '.*.tmp-*' -o -path '*/.tmp/*' -o -path '*/staging/*' -o -name '*.spool*' \) 2>/dev/null)
  [[ -z $found ]] || { echo "left behind:"; echo "$found"; return 1; }
}
fails() { ! "$@"; }
# deletes_since PATH_PREFIX N: DELETEs of PATH_PREFIX... in the proxy log after its first N lines.
# (distribution 2.8 answers 404 to a session whose monolithic PUT was cut off: its
# _state offset no longer matches; the request is what the client owes.)
deletes_since() { tail -n +"$(($2 + 1))" "$FP_PLOG" | grep -cE " conn=[0-9]+ DELETE $1" || true; }

# ==== push: SIGINT during the monolithic PUT of a layer =============================
throttle PUT '/blobs/uploads/'
n=$(wc -l <"$FP_PLOG")
interrupt push INT "$PI" push oci:img:v1 "$FP_HOST/sig/pushed:v1" --insecure -v --jobs 1
check "push: SIGINT mid-upload exits 130 within 10 s, saying so" stopped push 130
check "push: the open upload session was DELETEd" test "$(deletes_since '/v2/sig/pushed/blobs/uploads/' "$n")" -ge 1
check "push: the layout is untouched and has no temporaries" no_temps img
check "push: the tag was not written" fails skopeo inspect --tls-verify=false "docker://$REG_HOST/sig/pushed:v1"
proxy_rules fp ''
check "push: the same command then succeeds" "$PI" push oci:img:v1 "$FP_HOST/sig/pushed:v1" --insecure -q

# ==== pull: SIGTERM during a blob GET ===============================================
throttle GET '/blobs/sha256:'
interrupt pull TERM "$PI" pull "$FP_HOST/sig/img:v1" -o oci:pulled:v1 --insecure --jobs 1
check "pull: SIGTERM mid-download exits 143 within 10 s, saying so" stopped pull 143
check "pull: no temporary file in the layout" no_temps pulled
check "pull: every blob in the layout is whole" blobs_intact pulled
check "pull: the tag was not written" fails grep -q '"v1"' pulled/index.json
proxy_rules fp ''
check "pull: the same command then succeeds" "$PI" pull "$FP_HOST/sig/img:v1" -o oci:pulled:v1 --insecure -q

# ==== copy (registry to registry, streamed): SIGINT while the source is throttled ===
# The destination is the registry itself (another host name: no cross-repository mount).
throttle GET '/v2/sig/img/blobs/sha256:'
interrupt copy INT "$PI" copy "$FP_HOST/sig/img:v1" "$REG_HOST/sig/copied:v1" --insecure -v --jobs 1
check "copy: SIGINT mid-copy exits 130 within 10 s, saying so" stopped copy 130
check "copy: the destination's open upload session was DELETEd" \
  test "$(registry_access_count "$REG_LOG" DELETE '/v2/sig/copied/blobs/uploads/')" -ge 1
proxy_rules fp ''
check "copy: the same command then succeeds" "$PI" copy "$FP_HOST/sig/img:v1" "$REG_HOST/sig/copied:v1" --insecure -q

# ==== warm export: SIGTERM while writing the archive ================================
mkdir -p exp
throttle GET '/blobs/sha256:'
interrupt export TERM "$PI" warm export "$FP_HOST/sig/img:v1" -o exp/img.tar --insecure
check "warm export: SIGTERM mid-archive exits 143 within 10 s, saying so" stopped export 143
check "warm export: no archive and no temporary beside it" \
  bash -c '[[ -z $(ls -A exp) ]] || { ls -la exp; exit 1; }'
proxy_rules fp ''
check "warm export: the same command then succeeds" "$PI" warm export "$FP_HOST/sig/img:v1" -o exp/img.tar --insecure -q
check "warm export: the archive is whole" bash -c 'tar -tf exp/img.tar | grep -qx index.json'

# ==== build: SIGINT while the base is downloaded ====================================
cat >app.yaml <<YAML
image: {name: example.com/sig/app2, tags: [v2]}
base: $FP_HOST/sig/img:v1
layers:
  - name: app
    files: [{from: app/, to: /app/}]
YAML
mkdir -p app && echo 'print(1)' >app/main.py
throttle GET '/blobs/sha256:'
interrupt build INT "$PI" build app.yaml -o oci:built:v2 --insecure-registry "$FP_HOST" --cache-dir "$WORK/cache-b"
check "build: SIGINT mid-download exits 130 within 10 s, saying so" stopped build 130
check "build: no temporary file in the layout or the cache" no_temps built cache-b
proxy_rules fp ''
check "build: the same command then succeeds" \
  "$PI" build app.yaml -q -o oci:built:v2 --insecure-registry "$FP_HOST" --cache-dir "$WORK/cache-b"
check "build: the result is intact" blobs_intact built

# ==== lock: SIGTERM while a wheel is downloaded from the index ======================
python3 "$SUPPORT/make-index-wheels.py" "$WORK/wheels" --big-mb 8 >/dev/null
mkdir -p served && ln -sf "$WORK"/wheels/bigwheel-1.0-py3-none-any.whl served/
rm -f index.port
# Without PEP 658 metadata, lock downloads the wheel to read its Requires-Dist.
python3 "$SUPPORT/index_server.py" --no-metadata --root served --port-file index.port --log index.log 2>index.stderr &
INDEX_PID=$!
for ((i = 0; i < 300; i++)); do [[ -s index.port ]] && break; sleep 0.1; done
proxy_start ip "127.0.0.1:$(cat index.port)" "$WORK/isrv"
cat >lock.yaml <<'YAML'
image: {name: example.com/sig/py, tags: [v1]}
base: scratch
python: {version: "3.11", glibc: "2.36"}
layers:
  - name: deps
    wheels: {lock: requirements.lock}
YAML
echo 'bigwheel==1.0' >requirements.txt
proxy_rules ip '{"method": "GET", "path": "/files/bigwheel", "action": "throttle", "rate": 262144, "after_bytes": 65536, "times": -1}'
FP_PLOG_SAVED=$FP_PLOG
FP_PLOG=$IP_PLOG
interrupt lock TERM "$PI" lock requirements.txt -o requirements.lock --spec lock.yaml -i "$IP_URL/simple" \
  --insecure-registry "$IP_HOST" --cache-dir "$WORK/cache-l"
FP_PLOG=$FP_PLOG_SAVED
check "lock: SIGTERM mid-download exits 143 within 10 s, saying so" stopped lock 143
check "lock: no lock file and no temporary beside it or in the cache" \
  bash -c '[[ ! -e requirements.lock ]] && [[ -z $(ls -A . | grep "^\.requirements\.lock\.tmp-") ]]'
check "lock: no temporary file in the cache" no_temps cache-l
proxy_rules ip ''
check "lock: the same command then succeeds" "$PI" lock requirements.txt -q -o requirements.lock --spec lock.yaml \
  -i "$IP_URL/simple" --insecure-registry "$IP_HOST" --cache-dir "$WORK/cache-l"
check "lock: the lock pins bigwheel" grep -q 'bigwheel==1.0' requirements.lock

# ==== SIGKILL: pid-stamped leftovers; a live concurrent run's are kept ==============
# Run A (throttled) writes exp2/img.tar; run B to the same file finishes meanwhile and
# must not touch A's temporary; A is then killed with SIGKILL; run C removes A's leftover.
mkdir -p exp2
throttle GET '/blobs/sha256:'
n=$(grep -c 'throttled:' "$FP_PLOG" || true)
"$PI" warm export "$FP_HOST/sig/img:v1" -o exp2/img.tar --insecure >A.out 2>A.err &
A=$!
for ((i = 0; i < 600; i++)); do
  (($(grep -c 'throttled:' "$FP_PLOG" || true) > n)) && break
  sleep 0.1
done
a_tmp=$(ls -A exp2 | grep "^\.img\.tar\.tmp-$A-" || true)
check "run A's temporary carries its pid ($a_tmp)" test -n "$a_tmp"
proxy_rules fp ''
check "run B finishes while A runs" "$PI" warm export "$REG_HOST/sig/img:v1" -o exp2/img.tar --insecure -q
check "run B kept live run A's temporary" test -e "exp2/$a_tmp"
kill -KILL "$A" # paddle-image cannot see SIGKILL: its temporary stays
wait "$A" 2>/dev/null || true
check "SIGKILL leaves A's temporary behind" test -e "exp2/$a_tmp"
check "run C succeeds" "$PI" warm export "$REG_HOST/sig/img:v1" -o exp2/img.tar --insecure -q
check "run C removed dead A's temporary" test ! -e "exp2/$a_tmp"
# A killed build leaves "<pid>-*" in the cache's .tmp; the next build removes it. The
# base's view is taken from the earlier build's cache, so the throttled transfer is the
# download of the base layer into the cache (the view is read streaming, with no file).
mkdir -p cache-k && cp -r cache-b/base-view cache-k/
throttle GET '/blobs/sha256:'
n=$(grep -c 'throttled:' "$FP_PLOG" || true)
"$PI" build app.yaml -q -o oci:built2:v2 --insecure-registry "$FP_HOST" --cache-dir "$WORK/cache-k" >K.out 2>K.err &
K=$!
for ((i = 0; i < 600; i++)); do
  (($(grep -c 'throttled:' "$FP_PLOG" || true) > n)) && break
  sleep 0.1
done
kill -KILL "$K"
wait "$K" 2>/dev/null || true
check "a build killed with SIGKILL leaves its pid-stamped temporaries" \
  bash -c "find built2 cache-k -name '$K-*' | grep -q ."
proxy_rules fp ''
check "the next build succeeds" "$PI" build app.yaml -q -o oci:built2:v2 --insecure-registry "$FP_HOST" --cache-dir "$WORK/cache-k"
check "and removed the killed build's temporaries" no_temps built2 cache-k
finish
