#!/usr/bin/env bash
# Self-test of the registry test kit (registry.sh, token_server.py,
# fault_proxy.py), with curl only: starts a registry in each mode plus fault
# proxies, exercises them, and also pins the distribution 2.8 behaviours the
# registry client relies on.  Exits 0 when everything passed.
#
#   bash tests/support/registry/selftest.sh     (TEST_WORK=DIR keeps the files)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=registry.sh
source "$HERE/registry.sh"

if [[ -n ${TEST_WORK:-} ]]; then
  W=$TEST_WORK
  rm -rf "$W"
  mkdir -p "$W"
  KEEP=1
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/registry-selftest.XXXXXX")
  KEEP=
fi
cleanup() {
  registry_stop_all
  if [[ -z $KEEP && $PASSED_ALL == 1 ]]; then
    rm -rf "$W"
  else
    echo "# files kept in $W"
  fi
  return 0
}
PASSED_ALL=0
trap cleanup EXIT

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }
# same DESCRIPTION WANT GOT
same() {
  if [[ $2 == "$3" ]]; then pass "$1"; else fail "$1: wanted '$2', got '$3'"; fi
}
# has DESCRIPTION ERE TEXT
has() {
  if grep -qE -- "$2" <<<"$3"; then pass "$1"; else fail "$1: /$2/ not in: $(head -c 300 <<<"$3")"; fi
}

c() { curl -s --noproxy '*' "$@"; }
# rc CMD...: exit code of CMD (which may fail)
rc() {
  local r=0
  "$@" >/dev/null 2>&1 || r=$?
  echo "$r"
}
hdr() { grep -i "^$1:" | head -1 | tr -d '\r' | cut -d' ' -f2-; }
sha() { echo "sha256:$(sha256sum | cut -d' ' -f1)"; }

# Blob upload in three requests (POST, PATCH, PUT ?digest=).  Extra curl
# arguments (credentials) come from the AUTH array.  Prints the PUT's status.
AUTH=()
push_blob() { # BASE_URL REPO FILE
  local loc digest
  digest=$(sha <"$3")
  loc=$(c -i "${AUTH[@]}" -X POST "$1/v2/$2/blobs/uploads/" | hdr location)
  loc=$(c -i "${AUTH[@]}" -X PATCH -H 'Content-Type: application/octet-stream' \
    --data-binary @"$3" "$loc" | hdr location)
  c -o /dev/null -w '%{http_code}' "${AUTH[@]}" -X PUT "$loc&digest=$digest"
}

START=$SECONDS
head -c 5000000 /dev/urandom >"$W/big"
BIG=$(sha <"$W/big")
printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}' >"$W/config.json"
CONFIG=$(sha <"$W/config.json")

echo "# open mode"
registry_start open open "$W"
same "open: /v2/ answers 200" 200 "$(c -o /dev/null -w '%{http_code}' "$OPEN_URL/v2/")"
same "open: blob push (POST, PATCH, PUT)" 201 "$(push_blob "$OPEN_URL" t/app "$W/big")"
same "open: blob pull has the right digest" "$BIG" "$(c "$OPEN_URL/v2/t/app/blobs/$BIG" | sha)"
same "open: config blob push" 201 "$(push_blob "$OPEN_URL" t/app "$W/config.json")"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%d}]}' \
  "$CONFIG" "$(stat -c %s "$W/config.json")" "$BIG" "$(stat -c %s "$W/big")" >"$W/manifest.json"
MANIFEST=$(sha <"$W/manifest.json")
same "open: manifest PUT" 201 "$(c -o /dev/null -w '%{http_code}' -X PUT \
  -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary @"$W/manifest.json" \
  "$OPEN_URL/v2/t/app/manifests/v1")"
same "open: manifest GET by tag gives its digest" "$MANIFEST" "$(c -o /dev/null -D - \
  -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$OPEN_URL/v2/t/app/manifests/v1" |
  hdr docker-content-digest)"
same "access log: 2 completed blob uploads" 2 "$(registry_access_count "$OPEN_LOG" PUT '/v2/.*/blobs/uploads/' 201)"
same "access log: 1 manifest PUT" 1 "$(registry_access_count "$OPEN_LOG" PUT '/v2/t/app/manifests/' 201)"
same "access log: 2 PATCHes (any status)" 2 "$(registry_access_count "$OPEN_LOG" PATCH '/v2/t/app/blobs/uploads/')"

echo "# distribution 2.8 behaviours the client relies on"
c -D "$W/h" -o /dev/null -X POST "$OPEN_URL/v2/t/beh/blobs/uploads/"
LOC=$(hdr location <"$W/h")
same "POST upload answers Range 0-0" "0-0" "$(hdr range <"$W/h")"
head -c 40000 "$W/big" >"$W/part1"
c -D "$W/h" -o /dev/null -X PATCH -H 'Content-Type: application/octet-stream' --data-binary @"$W/part1" "$LOC"
same "PATCH answers Range 0-(size-1), no 'bytes='" "0-39999" "$(hdr range <"$W/h")"
LOC1=$(hdr location <"$W/h")
c -D "$W/h" -o /dev/null "$LOC1"
same "GET on the upload URL answers 204 ..." 204 "$(head -1 "$W/h" | cut -d' ' -f2)"
same "... with the current Range" "0-39999" "$(hdr range <"$W/h")"
head -c 100000 "$W/big" | tail -c 60000 >"$W/part2"
c -D "$W/h" -o /dev/null -X PATCH -H 'Content-Type: application/octet-stream' \
  -H 'Transfer-Encoding: chunked' -H 'Content-Range: 0-5' -T - "$LOC1" <"$W/part2"
same "chunked PATCH works; a wrong Content-Range is ignored (appended)" "0-99999" "$(hdr range <"$W/h")"
same "GET with a stale _state is 404" 404 "$(c -o "$W/body" -w '%{http_code}' "$LOC1")"
has "... BLOB_UPLOAD_INVALID" BLOB_UPLOAD_INVALID "$(cat "$W/body")"
same "PATCH with Content-Type x-www-form-urlencoded is refused (500)" 500 \
  "$(c -o /dev/null -w '%{http_code}' -X PATCH --data-binary @"$W/part1" "$(hdr location <"$W/h")")"
c -D "$W/h" -o /dev/null -X POST --data-binary @"$W/part1" \
  -H 'Content-Type: application/octet-stream' "$OPEN_URL/v2/t/beh/blobs/uploads/?digest=$(sha <"$W/part1")"
same "monolithic POST ?digest= is not supported (202, body ignored)" "202 0-0" \
  "$(head -1 "$W/h" | cut -d' ' -f2) $(hdr range <"$W/h")"
same "GET blob with Range gives 206" 206 "$(c -o /dev/null -w '%{http_code}' -H 'Range: bytes=10-19' "$OPEN_URL/v2/t/app/blobs/$BIG")"
same "cross-repository mount gives 201" 201 "$(c -o /dev/null -w '%{http_code}' -X POST \
  "$OPEN_URL/v2/t/other/blobs/uploads/?mount=$BIG&from=t/app")"

echo "# htpasswd mode"
registry_start basic htpasswd "$W"
c -D "$W/h" -o /dev/null "$BASIC_URL/v2/"
same "htpasswd: anonymous /v2/ is 401" 401 "$(head -1 "$W/h" | cut -d' ' -f2)"
has "htpasswd: WWW-Authenticate Basic" '^Basic realm="paddle-test-registry"' "$(hdr www-authenticate <"$W/h")"
same "htpasswd: alice gets 200" 200 "$(c -o /dev/null -w '%{http_code}' -u "alice:$BASIC_PASS" "$BASIC_URL/v2/")"
same "htpasswd: wrong password is 401" 401 "$(c -o /dev/null -w '%{http_code}' -u alice:wrong "$BASIC_URL/v2/")"
AUTH=(-u "$BASIC_USER:$BASIC_PASS")
same "htpasswd: blob push" 201 "$(push_blob "$BASIC_URL" t/app "$W/config.json")"
AUTH=()

echo "# token mode"
registry_start tok token "$W"
c -D "$W/h" -o /dev/null "$TOK_URL/v2/"
same "token: anonymous /v2/ is 401" 401 "$(head -1 "$W/h" | cut -d' ' -f2)"
same "token: WWW-Authenticate names realm and service" \
  "Bearer realm=\"$TOK_TOKEN_URL\",service=\"paddle-test-registry\"" "$(hdr www-authenticate <"$W/h")"
SCOPE="service=paddle-test-registry&scope=repository:t/app:pull,push"
same "token: wrong password is 401 at the token server" 401 \
  "$(c -o /dev/null -w '%{http_code}' -u bob:wrong "$TOK_TOKEN_URL?$SCOPE")"
json() { /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$1"; }
TOKEN=$(c -u "bob:$TOK_PASS" "$TOK_TOKEN_URL?$SCOPE" | json token)
has "token: bob gets a JWT" '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' "$TOKEN"
AUTH=(-H "Authorization: Bearer $TOKEN")
same "token: push with the token" 201 "$(push_blob "$TOK_URL" t/app "$W/config.json")"
same "token: pull with the token" "$CONFIG" "$(c "${AUTH[@]}" "$TOK_URL/v2/t/app/blobs/$CONFIG" | sha)"
same "token: the token does not cover another repository" 401 \
  "$(c -o /dev/null -w '%{http_code}' "${AUTH[@]}" "$TOK_URL/v2/t/other/blobs/$CONFIG")"
ANON=$(c "$TOK_TOKEN_URL?$SCOPE" | json token)
same "token: anonymous token cannot pull" 401 \
  "$(c -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ANON" "$TOK_URL/v2/t/app/blobs/$CONFIG")"
c -X POST --data-urlencode grant_type=password --data-urlencode username=bob \
  --data-urlencode "password=$TOK_PASS" --data-urlencode service=paddle-test-registry \
  --data-urlencode "scope=repository:t/app:pull" --data-urlencode client_id=selftest \
  --data-urlencode access_type=offline "$TOK_TOKEN_URL" >"$W/oauth.json"
REFRESH=$(json refresh_token <"$W/oauth.json")
same "token: OAuth2 password grant gives a working access_token" 200 \
  "$(c -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(json access_token <"$W/oauth.json")" \
    "$TOK_URL/v2/t/app/blobs/$CONFIG")"
has "token: ... and a refresh_token when offline access is asked" . "$REFRESH"
ACCESS=$(c -X POST --data-urlencode grant_type=refresh_token --data-urlencode "refresh_token=$REFRESH" \
  --data-urlencode service=paddle-test-registry --data-urlencode "scope=repository:t/app:pull" \
  "$TOK_TOKEN_URL" | json access_token)
same "token: refresh_token grant gives a working access_token" 200 \
  "$(c -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ACCESS" "$TOK_URL/v2/t/app/blobs/$CONFIG")"
same "token: bad refresh_token is 401" 401 "$(c -o /dev/null -w '%{http_code}' -X POST \
  -d grant_type=refresh_token -d refresh_token=nope "$TOK_TOKEN_URL")"
if grep -qF -e "$TOK_PASS" -e "$TOKEN" -e "$REFRESH" "$TOK_TOKEN_LOG"; then
  fail "token: the token server log holds a secret"
else
  pass "token: the token server log holds no password or token"
fi
registry_start short token "$W" --lifetime 2 --exp-skew 60
SHORT=$(c -u "bob:$SHORT_PASS" "$SHORT_TOKEN_URL?$SCOPE" | json token)
same "token: short-lived token works at once" 200 \
  "$(c -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SHORT" "$SHORT_URL/v2/")"
sleep 3
same "token: ... and is refused after 3 s (--lifetime 2 --exp-skew 60)" 401 \
  "$(c -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SHORT" "$SHORT_URL/v2/")"
registry_stop short
AUTH=()

echo "# tls mode"
registry_start sec tls "$W"
same "tls: 200 with the test CA" 200 "$(c -o /dev/null -w '%{http_code}' --cacert "$SEC_CA" "$SEC_URL/v2/")"
same "tls: HTTP/2 is negotiated" 2 "$SEC_HTTP_VERSION"
same "tls: also reachable as localhost" 200 \
  "$(c -o /dev/null -w '%{http_code}' --cacert "$SEC_CA" "https://localhost:${SEC_HOST#*:}/v2/")"
same "tls: an unrelated CA fails verification (curl 60)" 60 "$(rc c --cacert "$SEC_WRONG_CA" "$SEC_URL/v2/")"
same "tls: the wrong-name server fails verification (curl 60)" 60 \
  "$(rc c --cacert "$SEC_CA" "https://$SEC_WRONGNAME_HOST/v2/")"
same "tls: ... though its cert is fine for wrong.example" 200 "$(c -o /dev/null -w '%{http_code}' \
  --cacert "$SEC_CA" --resolve "wrong.example:${SEC_WRONGNAME_HOST#*:}:127.0.0.1" \
  "https://wrong.example:${SEC_WRONGNAME_HOST#*:}/v2/")"
same "tls: plain HTTP to the TLS port gets 400" 400 "$(c -o /dev/null -w '%{http_code}' "http://$SEC_HOST/v2/")"

echo "# fault proxy"
proxy_start px "$OPEN_HOST" "$W"
LOC=$(c -i -X POST "$PX_URL/v2/t/px/blobs/uploads/" | hdr location)
has "proxy: Location URLs point at the proxy (Host passed through)" "^$PX_URL/v2/t/px/blobs/uploads/" "$LOC"
same "proxy: blob push through the proxy" 201 "$(push_blob "$PX_URL" t/px "$W/big")"
same "proxy: blob pull through the proxy" "$BIG" "$(c "$PX_URL/v2/t/px/blobs/$BIG" | sha)"
has "proxy: HEAD gives headers and no body" "^200 0 5000000" \
  "$(c -I -m 5 -o /dev/null -w '%{http_code} %{size_download} ' "$PX_URL/v2/t/px/blobs/$BIG"; c -I "$PX_URL/v2/t/px/blobs/$BIG" | hdr content-length)"
same "proxy: keep-alive (second request reuses the connection)" "1 0 " \
  "$(c -o /dev/null -o /dev/null -w '%{num_connects} ' "$PX_URL/v2/" "$PX_URL/v2/t/px/blobs/$BIG")"

proxy_rules px '{"method": "GET", "path": "/blobs/sha256:", "action": "status", "code": 503, "headers": {"Retry-After": "1"}}'
c -D "$W/h" -o /dev/null "$PX_URL/v2/t/px/blobs/$BIG"
same "proxy status: first GET gets 503 ..." "503 1" "$(head -1 "$W/h" | cut -d' ' -f2) $(hdr retry-after <"$W/h")"
same "proxy status: ... the next passes" "$BIG" "$(c "$PX_URL/v2/t/px/blobs/$BIG" | sha)"

proxy_rules px '{"method": "GET", "path": "/blobs/", "action": "status", "code": 429, "skip": 1, "times": 2}'
CODES=""
for _ in 1 2 3 4; do CODES+="$(c -o /dev/null -w '%{http_code}' "$PX_URL/v2/t/px/blobs/$BIG") "; done
same "proxy skip/times: pass, 429, 429, pass" "200 429 429 200 " "$CODES"

proxy_rules px '{"method": "GET", "path": "/blobs/", "action": "cut_response", "after_bytes": 1000000}'
same "proxy cut_response: curl sees a partial transfer (18) ..." 18 "$(rc c -o "$W/out" "$PX_URL/v2/t/px/blobs/$BIG")"
same "proxy cut_response: ... after 1000000 bytes" 1000000 "$(stat -c %s "$W/out")"
same "proxy cut_response: range request to resume works" "$BIG" \
  "$(cat "$W/out" <(c -H 'Range: bytes=1000000-' "$PX_URL/v2/t/px/blobs/$BIG") | sha)"

proxy_rules px '{"method": "GET", "path": "/blobs/", "action": "corrupt", "offset": 4999999}'
c -o "$W/out" "$PX_URL/v2/t/px/blobs/$BIG"
if [[ $(sha <"$W/out") != "$BIG" && $(stat -c %s "$W/out") == 5000000 ]]; then
  pass "proxy corrupt: same size, different sha256"
else
  fail "proxy corrupt: body unchanged or wrong size"
fi
same "proxy corrupt: only once" "$BIG" "$(c "$PX_URL/v2/t/px/blobs/$BIG" | sha)"

proxy_rules px '{"method": "GET", "path": "/blobs/", "action": "stall", "after_bytes": 100, "seconds": 5}'
same "proxy stall: curl times out (28) ..." "28 100" \
  "$(r=0; n=$(c -m 1 -o /dev/null -w '%{size_download}' "$PX_URL/v2/t/px/blobs/$BIG") || r=$?; echo "$r $n")"

# throttle: 5 MB at 10 MB/s cannot take less than 0.5 s (a lower bound only: never flaky).
proxy_rules px '{"method": "GET", "path": "/blobs/", "action": "throttle", "rate": 10000000, "after_bytes": 1000000}'
T=$(c -o "$W/out" -w '%{time_total}' "$PX_URL/v2/t/px/blobs/$BIG")
same "proxy throttle: the body arrives whole" "$BIG" "$(sha <"$W/out")"
same "proxy throttle: at no more than the rate" 1 "$(python3 -c "print(int($T >= 0.5))")"
same "proxy throttle: one log line once after_bytes moved" 1 "$(grep -c "GET /v2/t/px/blobs/$BIG throttled: " "$PX_PLOG")"
proxy_rules px '{"method": "PUT", "action": "throttle", "rate": 10000000}'
same "proxy throttle: a request body too (push through it)" 201 "$(push_blob "$PX_URL" t/thr "$W/big")"
same "proxy throttle: ... stored whole" "$BIG" "$(c "$PX_URL/v2/t/thr/blobs/$BIG" | sha)"

LOC=$(c -i -X POST "$PX_URL/v2/t/cut/blobs/uploads/" | hdr location)
LOC=$(c -i -X PATCH -H 'Content-Type: application/octet-stream' --data-binary @"$W/part1" "$LOC" | hdr location)
proxy_rules px '{"method": "PATCH", "action": "cut_request", "after_bytes": 300000}'
has "proxy cut_request: curl gets no answer (52, 55 or 56)" '^5[256]$' "$(rc c -X PATCH \
  -H 'Content-Type: application/octet-stream' --data-binary @"$W/big" "$LOC")"
sleep 0.3
same "after a PATCH cut mid-body the last good _state is refused (404)" 404 \
  "$(c -o "$W/body" -w '%{http_code}' "$LOC")"
has "... with BLOB_UPLOAD_INVALID: the upload cannot be resumed" BLOB_UPLOAD_INVALID "$(cat "$W/body")"
same "registry access-logs the cut PATCH as 500" 1 "$(registry_access_count "$OPEN_LOG" PATCH '/v2/t/cut/' 500)"
has "... and its error log says it kept the partial bytes" 'upload resumed at wrong offest: 340000 != 40000' \
  "$(grep -a 'wrong offest' "$OPEN_LOG")"

proxy_rules px '{"method": "PATCH", "action": "max_body", "limit": 1000000, "headers": {"X-Why": "too big"}}'
LOC=$(c -i -X POST "$PX_URL/v2/t/mb/blobs/uploads/" | hdr location)
c -D "$W/h" -o /dev/null -X PATCH -H 'Content-Type: application/octet-stream' --data-binary @"$W/big" "$LOC"
same "proxy max_body: big PATCH gets 413 with the rule's headers" "413 too big" \
  "$(head -1 "$W/h" | cut -d' ' -f2) $(hdr x-why <"$W/h")"
c -D "$W/h" -o /dev/null -X PATCH -H 'Content-Type: application/octet-stream' \
  -H 'Transfer-Encoding: chunked' -T - "$LOC" <"$W/big"
same "proxy max_body: big chunked PATCH gets 413 too" 413 "$(tail -n +1 "$W/h" | grep '^HTTP/' | tail -1 | cut -d' ' -f2)"
c -D "$W/h" -o /dev/null -X PATCH -H 'Content-Type: application/octet-stream' -H 'Expect:' \
  --data-binary @"$W/big" "$LOC"
same "proxy max_body: also without Expect (body drained, 413)" 413 "$(head -1 "$W/h" | cut -d' ' -f2)"
c -D "$W/h" -o /dev/null -X PATCH -H 'Content-Type: application/octet-stream' \
  -H 'Transfer-Encoding: chunked' -T - "$LOC" <"$W/part1"
same "proxy: small chunked PATCH passes (chunked request body relayed)" "0-39999" "$(hdr range <"$W/h")"
LOC=$(hdr location <"$W/h")
c -D "$W/h" -o /dev/null -X PATCH -H 'Content-Type: application/octet-stream' \
  -H 'Transfer-Encoding: chunked' -T - "$LOC" <"$W/part2"
same "proxy: second chunked PATCH" "0-99999" "$(hdr range <"$W/h")"
same "proxy: finish the chunked upload" 201 "$(c -o /dev/null -w '%{http_code}' -X PUT \
  "$(hdr location <"$W/h")&digest=$(head -c 100000 "$W/big" | sha)")"
# body_has: OCI 1.1 artifact manifests (an artifactType) refused, the others passed through.
sed 's/^{"schemaVersion":2,/{"schemaVersion":2,"artifactType":"application\/vnd.example.thing",/' \
  "$W/manifest.json" >"$W/artifact.json"
mput() { # FILE TAG: PUTs the manifest through the proxy as t/app:TAG, prints the status
  c -D "$W/h" -o "$W/body" -w '%{http_code}' -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
    --data-binary @"$1" "$PX_URL/v2/t/app/manifests/$2"
}
proxy_rules px '{"method": "PUT", "path": "/manifests/", "body_has": "artifactType", "action": "status", "code": 400, "body": "{\"errors\":[{\"code\":\"MANIFEST_INVALID\",\"message\":\"artifactType not supported\"}]}", "headers": {"Content-Type": "application/json"}, "times": -1}'
same "proxy body_has: a manifest PUT with the text gets the rule's answer" "400 application/json" \
  "$(mput "$W/artifact.json" art) $(hdr content-type <"$W/h")"
has "... and its body" '"code":"MANIFEST_INVALID","message":"artifactType not supported"' "$(cat "$W/body")"
same "... chunked, with Expect: 100-continue, too (times -1)" 400 \
  "$(c -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
    -H 'Transfer-Encoding: chunked' -H 'Expect: 100-continue' -T - "$PX_URL/v2/t/app/manifests/art" <"$W/artifact.json")"
same "... one without it passes to the registry (201)" 201 "$(mput "$W/manifest.json" v2)"
same "... its body unchanged (same digest by tag)" "$MANIFEST" "$(c -o /dev/null -D - \
  -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$PX_URL/v2/t/app/manifests/v2" | hdr docker-content-digest)"
same "... chunked too" 201 "$(c -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
  -H 'Transfer-Encoding: chunked' -T - "$PX_URL/v2/t/app/manifests/v3" <"$W/manifest.json")"
same "... and the refused ones never reached the registry" "0 2" \
  "$(registry_access_count "$OPEN_LOG" PUT '/v2/t/app/manifests/art') $(registry_access_count "$OPEN_LOG" PUT '/v2/t/app/manifests/v[23]' 201)"
proxy_rules px '{"method": "PUT", "path": "/manifests/", "body_has": "artifactType", "action": "status", "code": 418, "skip": 1, "times": 1}'
CODES=""
for f in manifest artifact manifest artifact manifest artifact; do CODES+="$(mput "$W/$f.json" "c-$f") "; done
same "proxy body_has: skip/times count matching requests only (plain, skip, plain, 418, plain, used up)" \
  "201 201 201 418 201 201 " "$CODES"

# hang: the request is taken, no answer ever comes; its log line is there while the client waits.
proxy_rules px '{"method": "GET", "path": "/v2/t/hang/", "action": "hang"}'
c -m 3 -o /dev/null -w '%{http_code} %{size_download}' "$PX_URL/v2/t/hang/blobs/$BIG" >"$W/hang.out" 2>&1 &
HANG=$!
for _ in $(seq 20); do grep -q "GET /v2/t/hang/blobs/$BIG .*action=hang" "$PX_PLOG" && break; sleep 0.1; done
same "proxy hang: the log line is written as the request arrives, the client still waiting" "1 yes" \
  "$(grep -c "GET /v2/t/hang/blobs/$BIG .*action=hang" "$PX_PLOG") $(kill -0 "$HANG" 2>/dev/null && echo yes)"
R=0
wait "$HANG" || R=$?
same "... and curl --max-time 3 times out (28) with no byte of an answer" "28 000 0" "$R $(cat "$W/hang.out")"
proxy_rules px '{"method": "PATCH", "action": "hang", "times": -1}'
LOC=$(c -i -X POST "$PX_URL/v2/t/hang/blobs/uploads/" | hdr location)
same "proxy hang: a PATCH with a body gets no answer either (28)" 28 "$(rc c -m 3 -X PATCH \
  -H 'Content-Type: application/octet-stream' --data-binary @"$W/big" "$LOC")"
same "... its log line too" 1 "$(grep -c 'PATCH /v2/t/hang/blobs/uploads/.* action=hang' "$PX_PLOG")"
same "... and the proxy answers the next request" 200 "$(c -o /dev/null -w '%{http_code}' "$PX_URL/v2/")"
proxy_rules px ''
LOC=$(c -i -X POST "$PX_URL/v2/t/mb/blobs/uploads/" | hdr location)
same "proxy: rules cleared, big PATCH passes" 202 "$(c -o /dev/null -w '%{http_code}' -X PATCH \
  -H 'Content-Type: application/octet-stream' --data-binary @"$W/big" "$LOC")"

# A registry that answers before reading the body (401 to Expect: 100-continue).
proxy_start bpx "$BASIC_HOST" "$W"
same "proxy: early final answer to Expect is relayed (401)" 401 "$(c -o /dev/null -w '%{http_code}' -X PUT \
  -H 'Content-Type: application/octet-stream' --data-binary @"$W/big" "$BPX_URL/v2/t/x/blobs/uploads/x")"
AUTH=(-u "$BASIC_USER:$BASIC_PASS")
same "proxy: authenticated push through the proxy" 201 "$(push_blob "$BPX_URL" t/bpx "$W/big")"
AUTH=()
if grep -qiF -e authorization -e "$(printf '%s' "$BASIC_USER:$BASIC_PASS" | base64)" "$BPX_PLOG"; then
  fail "proxy: the log holds credentials"
else
  pass "proxy: the log holds no credentials"
fi

echo "# teardown"
registry_stop_all
registry_stop_all
if kill -0 "$OPEN_PID" 2>/dev/null || kill -0 "$PX_PID" 2>/dev/null || kill -0 "$TOK_TOKEN_PID" 2>/dev/null; then
  fail "a process survived registry_stop_all"
else
  pass "registry, proxy and token server are gone"
fi

echo "selftest took $((SECONDS - START)) s"
echo "registry-selftest: $PASSED passed, $FAILED failed"
if ((FAILED == 0)); then PASSED_ALL=1; fi
((FAILED == 0))
