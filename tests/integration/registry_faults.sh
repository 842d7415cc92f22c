#!/usr/bin/env bash
# The registry client under faults: push and pull through fault_proxy.py (in
# front of a local distribution 2.8 registry) that answers 5xx/429/413, cuts
# request and response bodies, stalls and corrupts.  Every push that succeeds is
# checked on the registry directly (skopeo, and a pull back with intact blobs);
# every pull that fails must leave no corrupt, partial or temporary blob behind.
# Every command through the proxy first spends ~3 s on the TLS probe of an
# --insecure host (fault_proxy waits for a request line that a TLS hello never
# completes), so the whole test takes about a minute.
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
cd "$WORK"

TARPIT_PID=
cleanup() {
  if [[ -n $TARPIT_PID ]]; then kill "$TARPIT_PID" 2>/dev/null || true; fi
  registry_stop_all
}
trap cleanup EXIT

# ---- the image: config + two uncompressed 6 MiB layers of random bytes ----
two_layer_image example.com/faults/app 6
IMG_DIGEST=$(manifest_digest img v1)
mapfile -t LAYERS < <(layer_digests img v1)
L1=${LAYERS[0]#sha256:}
L2=${LAYERS[1]#sha256:}
CONFIG=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"][7:])' \
  "img/blobs/sha256/${IMG_DIGEST#sha256:}")
# PATCHes a 1 MiB chunked push of the image needs (config + both layers).
CHUNKS=0
for d in "$CONFIG" "$L1" "$L2"; do
  CHUNKS=$((CHUNKS + ($(stat -c %s "img/blobs/sha256/$d") + 1048575) / 1048576))
done

registry_start reg open "$WORK/srv"
proxy_start fp "$REG_HOST" "$WORK/srv"

# ---- helpers ----
# run_push NAME [FLAGS...]: push oci:img:v1 through the proxy to faults/NAME:v1
# (-v log in NAME.log, metadata in NAME.json).
run_push() {
  local name=$1
  shift
  "$PI" push oci:img:v1 "$FP_HOST/faults/$name:v1" --insecure -v --metadata-file "$name.json" "$@" \
    >/dev/null 2>"$name.log" || { tail -5 "$name.log"; return 1; }
}
# run_pull NAME [FLAGS...]: pull faults/src:v1 through the proxy into oci:NAME.
run_pull() {
  local name=$1
  shift
  "$PI" pull "$FP_HOST/faults/src:v1" -o "oci:$name" --insecure -v --metadata-file "$name.json" "$@" \
    >/dev/null 2>"$name.log" || { tail -5 "$name.log"; return 1; }
}
# meta FILE PYTHON_EXPR: assert EXPR over the metadata j (stats in s).
meta() {
  python3 -c 'import json,sys
j = json.load(open(sys.argv[1])); s = j["stats"]
assert eval(sys.argv[2]), "%s is false in %s" % (sys.argv[2], j)' "$1" "$2"
}
log_has() { # NAME ERE: NAME.log has a line matching ERE
  grep -qE -- "$2" "$1.log" || { echo "/$2/ not in $1.log:"; tail -5 "$1.log"; return 1; }
}
# in_registry NAME: the registry itself (not the proxy) has faults/NAME:v1 as
# the image's digest (skopeo), and a direct pull gives intact blobs.
in_registry() {
  local got
  got=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$REG_HOST/faults/$1:v1") || return 1
  [[ $got == "$IMG_DIGEST" ]] || { echo "registry has $got, wanted $IMG_DIGEST"; return 1; }
  "$PI" pull "$REG_HOST/faults/$1:v1" -o "oci:back-$1" --insecure -q >/dev/null || return 1
  blobs_intact "back-$1" || return 1
  [[ $(manifest_digest "back-$1" v1) == "$IMG_DIGEST" ]] || { echo "pulled back another digest"; return 1; }
  local d
  for d in "$CONFIG" "$L1" "$L2"; do
    cmp -s "img/blobs/sha256/$d" "back-$1/blobs/sha256/$d" || { echo "blob $d differs"; return 1; }
  done
}
# pulled_ok NAME: a complete pull: intact blobs, the image's digest, every layer.
pulled_ok() {
  blobs_intact "$1" || return 1
  [[ $(manifest_digest "$1" v1) == "$IMG_DIGEST" ]] || { echo "$1: wrong or no v1"; return 1; }
  meta "$1.json" "j['digest'] == '$IMG_DIGEST'" || return 1
  local d
  for d in "$CONFIG" "$L1" "$L2"; do
    cmp -s "img/blobs/sha256/$d" "$1/blobs/sha256/$d" || { echo "$1: blob $d missing or different"; return 1; }
  done
}
# no_leftovers LAYOUT [DIGEST...]: after a failed pull, every file under
# blobs/sha256 is a complete blob named by its sha256, none of DIGEST is there,
# no temporary file is left, and the layout does not claim the tag.
no_leftovers() {
  local dir=$1 f d
  shift
  [[ -d $dir ]] || return 0
  blobs_intact "$dir" || return 1
  for f in "$dir"/blobs/sha256/*; do
    [[ -e $f ]] || continue
    [[ $(basename "$f") =~ ^[0-9a-f]{64}$ ]] || { echo "stray file $f"; return 1; }
  done
  for d in "$@"; do
    [[ ! -e $dir/blobs/sha256/$d ]] || { echo "$dir has $d"; return 1; }
  done
  if [[ -d $dir/.tmp ]] && [[ -n $(ls -A "$dir/.tmp") ]]; then
    echo "temporary files left: $(ls -A "$dir/.tmp")"
    return 1
  fi
  if [[ -f $dir/index.json ]] && [[ -n $(manifest_digest "$dir" v1) ]]; then
    echo "$dir claims v1"
    return 1
  fi
}
# expect_exit DESCRIPTION CODES_ERE STDERR_ERE CMD...: like expect_fail, for a
# failure that may fairly be reported with one of several exit codes.
expect_exit() {
  local d=$1 want=$2 pat=$3
  shift 3
  local rc=0
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  if [[ ! $rc =~ ^($want)$ ]]; then
    fail "$d (exit $rc, wanted $want): $(head -3 "$WORK/err.txt")"
  elif ! grep -qE -- "$pat" "$WORK/err.txt"; then
    fail "$d (stderr lacks /$pat/): $(head -3 "$WORK/err.txt")"
  else
    pass "$d"
  fi
}
injected() { # NAME ERE: proxy log lines of faults/NAME requests matching ERE
  grep -F "/v2/faults/$1/" "$FP_PLOG" | grep -cE -- "$2" || true
}
ELAPSED=0
timed() { # timed CMD...: runs CMD, its wall time (ms) in $ELAPSED (bash arithmetic, no bc)
  local t0 rc=0
  t0=$(date +%s%3N)
  "$@" || rc=$?
  ELAPSED=$(( $(date +%s%3N) - t0 ))
  return $rc
}
faster_than() { # SECONDS: the last timed command took less than SECONDS
  (( ELAPSED < $1 * 1000 )) || { echo "took ${ELAPSED} ms, wanted < $1 s"; return 1; }
}

# gap_within FIRST_ERE NEXT_ERE MIN MAX: in the proxy log, the next line
# matching NEXT_ERE after the last line matching FIRST_ERE came MIN..MAX seconds
# later.  (The proxy logs a request when it is done, an injected fault when it
# strikes: for a status or stall that is when the client starts waiting.)
gap_within() {
  python3 - "$FP_PLOG" "$@" <<'PY'
import datetime, re, sys
log, first, nxt, lo, hi = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
t = lambda l: datetime.datetime.strptime(l.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
lines = open(log).read().splitlines()
hits = [n for n, l in enumerate(lines) if re.search(first, l)]
assert hits, "no proxy log line matches /%s/" % first
after = [l for l in lines[hits[-1] + 1:] if re.search(nxt, l)]
assert after, "nothing matches /%s/ after /%s/" % (nxt, first)
gap = (t(after[0]) - t(lines[hits[-1]])).total_seconds()
assert lo <= gap <= hi, "%.2f s between them, wanted %g..%g s" % (gap, lo, hi)
PY
}

BLOB_PUT='/blobs/uploads/.*[?&]digest='
START=$SECONDS

# The source for the pull scenarios, pushed straight to the registry.
check "setup: push straight to the registry" "$PI" push oci:img:v1 "$REG_HOST/faults/src:v1" --insecure -q
check "setup: skopeo sees it with the image's digest" \
  bash -c "[[ \$(skopeo inspect --tls-verify=false --format '{{.Digest}}' docker://$REG_HOST/faults/src:v1) == $IMG_DIGEST ]]"

# 1. 500, 502, 503 once each on the blob PUTs.
proxy_rules fp "{\"method\":\"PUT\",\"path\":\"$BLOB_PUT\",\"action\":\"status\",\"code\":500}
{\"method\":\"PUT\",\"path\":\"$BLOB_PUT\",\"action\":\"status\",\"code\":502}
{\"method\":\"PUT\",\"path\":\"$BLOB_PUT\",\"action\":\"status\",\"code\":503}"
check "1: 500, 502 and 503 on blob PUTs: the push completes" run_push s1
check "1: ... the proxy injected all three" test "$(injected s1 'action=status')" -eq 3
check "1: ... the metadata counts a retry for each" meta s1.json "s['retries'] >= 3 and s['blobs_uploaded'] == 3"
check "1: ... the log says why it retried" log_has s1 'retrying in [0-9.]+ s \(attempt 2 of 6\): uploading sha256:.* again with a new session: HTTP 50[023]'
check "1: ... the registry has the image" in_registry s1

# 2. 429 with Retry-After: 1 on the manifest PUT.
proxy_rules fp '{"method":"PUT","path":"/manifests/","action":"status","code":429,"headers":{"Retry-After":"1"}}'
check "2: 429 + Retry-After: 1 on the manifest PUT: the push completes" run_push s2
check "2: ... counting the retry" meta s2.json "s['retries'] >= 1 and s['manifests_put'] == 1"
check "2: ... after waiting the second Retry-After asks for" \
  gap_within "PUT /v2/faults/s2/manifests/v1 .*status=429" "PUT /v2/faults/s2/manifests/v1 " 1 3
check "2: ... the log says so" log_has s2 'retrying in 1\.0 s \(attempt 2 of 6\): putting manifest .*HTTP 429'
check "2: ... the registry has the image" in_registry s2

# 3. The connection is cut 1 MiB into the monolithic PUT of a layer (while the
# client is still sending: a send error, retried with a new session).
proxy_rules fp "{\"method\":\"PUT\",\"path\":\"digest=sha256%3A$L1\",\"action\":\"cut_request\",\"after_bytes\":1048576}"
check "3: monolithic PUT cut after 1 MiB: the push completes" run_push s3
check "3: ... the proxy did cut it" test "$(injected s3 'action=cut_request .*request cut')" -eq 1
check "3: ... the blob went again in a new session" log_has s3 "uploading sha256:$L1 again with a new session"
check "3: ... which the registry completed once" \
  test "$(registry_access_count "$REG_LOG" PUT "/v2/faults/s3/blobs/uploads/.*digest=sha256%3A$L1" 201)" -eq 1
check "3: ... the registry has the image" in_registry s3

# 4. Chunked: a 503 on the second PATCH of the first layer (with --jobs 1 the
# config goes first in one PATCH, so that is the third PATCH).
proxy_rules fp '{"method":"PATCH","path":"/blobs/uploads/","action":"status","code":503,"skip":2}'
check "4: chunked, 503 between chunks: the push completes" run_push s4 --chunk-size 1M --jobs 1
check "4: ... resuming after the acknowledged chunk" \
  log_has s4 "resuming the upload of sha256:$L1 after byte 1048576 acknowledged by $FP_HOST"
check "4: ... no chunk was sent to the registry twice ($CHUNKS PATCHes)" \
  test "$(registry_access_count "$REG_LOG" PATCH '/v2/faults/s4/blobs/uploads/' 202)" -eq "$CHUNKS"
check "4: ... one upload session per blob" \
  test "$(registry_access_count "$REG_LOG" POST '/v2/faults/s4/blobs/uploads/' 202)" -eq 3
check "4: ... the registry has the image" in_registry s4

# 5. Chunked: the second PATCH of the first layer is cut 300 KB into its body;
# distribution 2.8 then forgets the session, so the client needs a new one.
proxy_rules fp '{"method":"PATCH","path":"/blobs/uploads/","action":"cut_request","after_bytes":300000,"skip":2}'
check "5: chunked, PATCH cut mid-chunk: the push completes" run_push s5 --chunk-size 1M --jobs 1
check "5: ... the proxy did cut it" test "$(injected s5 'action=cut_request .*request cut')" -eq 1
check "5: ... the client found the session lost and started a new one" \
  log_has s5 "uploading sha256:$L1 again with a new session: upload session lost"
check "5: ... the registry has the image" in_registry s5

# 6. A front proxy refusing bodies over 2 MiB with 413.
proxy_rules fp '{"method":"PUT","path":"/blobs/uploads/","action":"max_body","limit":2097152,"headers":{"OCI-Chunk-Min-Length":"1048576"}}
{"method":"PATCH","path":"/blobs/uploads/","action":"max_body","limit":2097152}'
check "6: 413 for bodies over 2 MiB: the push completes" run_push s6
check "6: ... falling back to chunks" log_has s6 "refused a [0-9]+-byte body \(413\); uploading in chunks"
check "6: ... no body over 2 MiB got through" test "$(grep -F /v2/faults/s6/ "$FP_PLOG" |
  grep -F action=pass | grep -oE ' in=[0-9]+' | awk -F= '$2 > 2097152' | wc -l)" -eq 0
check "6: ... the layers went as PATCHes" \
  test "$(registry_access_count "$REG_LOG" PATCH '/v2/faults/s6/blobs/uploads/' 202)" -ge 4
check "6: ... the registry has the image" in_registry s6

# 7. Pull: a layer's response is cut 1 MiB in.
proxy_rules fp "{\"method\":\"GET\",\"path\":\"/blobs/sha256:$L1\",\"action\":\"cut_response\",\"after_bytes\":1048576}"
check "7: blob response cut mid-way: the pull completes" run_pull p7
check "7: ... the proxy did cut it" test "$(injected src "GET /v2/faults/src/blobs/sha256:$L1 .*response cut")" -eq 1
check "7: ... resuming with Range" log_has p7 "resuming download of sha256:$L1 at byte [1-9][0-9]*"
check "7: ... which the registry answered with 206" \
  test "$(registry_access_count "$REG_LOG" GET "/v2/faults/src/blobs/sha256:$L1" 206)" -ge 1
check "7: ... blobs intact, same image" pulled_ok p7

# 8. Pull: a layer's response stalls 1 MiB in for 10 s; --timeout 2.
proxy_rules fp "{\"method\":\"GET\",\"path\":\"/blobs/sha256:$L2\",\"action\":\"stall\",\"after_bytes\":1048576,\"seconds\":10}"
check "8: blob response stalls, --timeout 2: the pull completes" run_pull p8 --timeout 2
check "8: ... the stall was noticed (not waited out until the proxy hung up)" \
  log_has p8 "retrying in [0-9.]+ s \(attempt 2 of 6\): downloading sha256:$L2 .*(too slow|timed out|stalled)"
check "8: ... and given up within --timeout 2 (+ 2.5 s for backoff and slack)" \
  gap_within "GET /v2/faults/src/blobs/sha256:$L2 .* stalled " "GET /v2/faults/src/blobs/sha256:$L2 " 0 4.5
check "8: ... resuming with Range" log_has p8 "resuming download of sha256:$L2 at byte [1-9][0-9]*"
check "8: ... blobs intact, same image" pulled_ok p8

# 9. Pull: one byte of a layer flipped on the way.
proxy_rules fp "{\"method\":\"GET\",\"path\":\"/blobs/sha256:$L1\",\"action\":\"corrupt\",\"offset\":123457,\"times\":-1}"
expect_fail "9: a corrupted blob is an integrity error (exit 8)" 8 "sha256:$L1 that does not match" \
  "$PI" pull "$FP_HOST/faults/src:v1" -o oci:p9 --insecure
check "9: ... nothing of it was stored" no_leftovers p9 "$L1"

# 10. Unrecoverable: 503 for ever.
proxy_rules fp "{\"method\":\"PUT\",\"path\":\"$BLOB_PUT\",\"action\":\"status\",\"code\":503,\"times\":-1}"
expect_exit "10: 503 for ever on blob PUTs, --retries 1: the push fails (exit 6 or 7)" '6|7' \
  "$FP_HOST.*503|503.*$FP_HOST" "$PI" push oci:img:v1 "$FP_HOST/faults/s10:v1" --insecure --retries 1
check "10: ... and pushed no manifest" \
  test "$(registry_access_count "$REG_LOG" PUT '/v2/faults/s10/manifests/')" -eq 0
proxy_rules fp '{"method":"GET","path":"/blobs/sha256:","action":"status","code":503,"times":-1}'
expect_fail "10: 503 for ever on blob GETs, --retries 1: the pull fails (exit 7)" 7 "$FP_HOST.*HTTP 503" \
  "$PI" pull "$FP_HOST/faults/src:v1" -o oci:p10 --insecure --retries 1
check "10: ... leaving no partial blob" no_leftovers p10 "$CONFIG" "$L1" "$L2"

# 11. A stalled push, --timeout 2 --retries 0: it fails fast, naming the host.
# (fault_proxy's stall needs a response body to stall in, and upload answers
# have none: the GET /v2/ the push starts with has one.)
proxy_rules fp '{"method":"GET","path":"^/v2/$","action":"stall","after_bytes":0,"seconds":30,"times":-1}'
expect_fail "11: push whose registry stalls at the first answer fails with exit 6" 6 \
  "$FP_HOST.*(stalled|timed out)" timed "$PI" push oci:img:v1 "$FP_HOST/faults/s11:v1" --insecure --timeout 2 --retries 0
check "11: ... within seconds" faster_than 10
printf "# the push gave up after %d ms\n" "$ELAPSED"
# A registry that stops reading an upload body and never answers (a tarpit:
# GET /v2/, HEAD, POST answered; PUT/PATCH bodies never read).
cat >tarpit.py <<'PY'
import socket, socketserver, sys, threading, time
class H(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        if s.recv(1, socket.MSG_PEEK) == b"\x16":
            return                     # TLS: hang up, the client falls back to HTTP
        f = s.makefile("rb")
        while True:
            line = f.readline(65536)
            if not line:
                return
            method, target = line.decode("latin-1").split(" ")[:2]
            length = 0
            while True:
                h = f.readline(65536)
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.decode("latin-1").partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v)
            if method in ("PUT", "PATCH") and length > 0:
                time.sleep(40)         # never read the body, never answer
                return
            if length:
                f.read(length)
            extra, body = "", b""
            if method == "GET" and target == "/v2/":
                code, body = "200 OK", b"{}"
            elif method == "POST":
                code, extra = "202 Accepted", "Location: /v2/faults/s11/blobs/uploads/1\r\nRange: 0-0\r\n"
            else:
                code = "404 Not Found"
                if method != "HEAD":
                    body = b'{"errors":[{"code":"NOT_FOUND","message":"tarpit"}]}'
            head = "HTTP/1.1 %s\r\nDocker-Distribution-API-Version: registry/2.0\r\n%sContent-Length: %d\r\n\r\n"
            s.sendall((head % (code, extra, len(body))).encode() + (b"" if method == "HEAD" else body))
class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
srv = S(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write("%d\n" % srv.server_address[1])
threading.Timer(60, lambda: srv.shutdown()).start()   # never outlive the test long
srv.serve_forever()
PY
/usr/bin/python3 tarpit.py tarpit.port </dev/null >tarpit.log 2>&1 &
TARPIT_PID=$!
for _ in $(seq 50); do [[ -s tarpit.port ]] && break; sleep 0.1; done
TARPIT_HOST=127.0.0.1:$(cat tarpit.port)
expect_fail "11: push whose upload body stalls fails with exit 6" 6 "$TARPIT_HOST.*(stalled|timed out)" \
  timed "$PI" push oci:img:v1 "$TARPIT_HOST/faults/s11:v1" --insecure --timeout 2 --retries 0
check "11: ... within seconds (the tarpit holds on for 40 s)" faster_than 10
printf "# the push gave up after %d ms\n" "$ELAPSED"

echo "# $((SECONDS - START)) s"
finish
