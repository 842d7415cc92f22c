#!/usr/bin/env bash
# Self-test of the package-index test kit (make-index-wheels.py, index_server.py)
# using only curl and python3.  Prints "ok - ..." / "not ok - ..." per check and
# exits non-zero if any check failed.
#
#   bash tests/support/index-selftest.sh     (TEST_WORK=DIR keeps the files there)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy

if [[ -n ${TEST_WORK:-} ]]; then
  W=$TEST_WORK
  rm -rf "$W"
  mkdir -p "$W"
  KEEP=1
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/index-selftest.XXXXXX")
  KEEP=
fi

PIDS=()
PASSED=0
FAILED=0
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  if [[ -z $KEEP && $FAILED -eq 0 ]]; then
    rm -rf "$W"
  else
    echo "# files kept in $W"
  fi
  return 0
}
trap cleanup EXIT

pass() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "not ok - $*"; }
same() { # same DESCRIPTION WANT GOT
  if [[ $2 == "$3" ]]; then pass "$1"; else fail "$1: wanted '$2', got '$3'"; fi
}
check() { # check DESCRIPTION CMD...
  local d=$1
  shift
  if "$@" >"$W/check.out" 2>&1; then pass "$d"; else fail "$d: $(tail -5 "$W/check.out")"; fi
}
c() { curl -sS --noproxy '*' --max-time 30 "$@"; }
code() { c -o /dev/null -w '%{http_code}' "$@" || true; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# start_server NAME [ARGS...]: sets PORT_<NAME>, PID_<NAME>; log in $W/NAME.log
start_server() {
  local name=$1
  shift
  rm -f "$W/$name.port"
  "$PY" "$HERE/index_server.py" --root "$WHEELS" --port-file "$W/$name.port" \
    --log "$W/$name.log" "$@" 2>"$W/$name.stderr" &
  local pid=$!
  PIDS+=("$pid")
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s $W/$name.port ]] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "server $name died: $(cat "$W/$name.stderr")" >&2
      exit 1
    fi
    sleep 0.1
  done
  [[ -s $W/$name.port ]] || { echo "server $name did not start" >&2; exit 1; }
  printf -v "PORT_$name" '%s' "$(cat "$W/$name.port")"
  printf -v "PID_$name" '%s' "$pid"
}

WHEELS=$W/wheels
"$PY" "$HERE/make-index-wheels.py" "$WHEELS" --big-mb 2
check "wheels generated, .done records big-mb" grep -qx 'big-mb=2' "$WHEELS/.done"
check "generator is idempotent" "$PY" "$HERE/make-index-wheels.py" "$WHEELS" --big-mb 2
check "every wheel has a valid RECORD" "$PY" - "$WHEELS" <<'EOF'
import base64, glob, hashlib, sys, zipfile
for w in glob.glob(sys.argv[1] + "/*.whl"):
    z = zipfile.ZipFile(w)
    rec = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")]
    assert len(rec) == 1, w
    listed = set()
    for line in z.read(rec[0]).decode().splitlines():
        p, h, s = line.rsplit(",", 2)
        listed.add(p)
        if p == rec[0]:
            continue
        d = z.read(p)
        want = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
        assert h == "sha256=" + want and int(s) == len(d), (w, p)
    assert listed == set(z.namelist()), w
big = zipfile.ZipFile(sys.argv[1] + "/bigwheel-1.0-py3-none-any.whl").getinfo("bigwheel/blob.bin")
assert big.compress_type == zipfile.ZIP_STORED and big.file_size == 2 << 20
EOF

YANKED=alpha-1.0-py3-none-any.whl
start_server main --yank "$YANKED=broken <build>"
B=http://127.0.0.1:$PORT_main

# ---- HTML pages: every file listed, fragments match sha256sum -------------
(cd "$WHEELS" && sha256sum -- *.whl *.tar.gz | awk '{print $2, $1}' | sort) >"$W/want.sums"
"$PY" - "$B" >"$W/html.sums" <<'EOF'
import html.parser, sys, urllib.parse, urllib.request
base = sys.argv[1]
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.links = []
    def handle_starttag(self, tag, attrs):
        if tag == "a": self.links.append(dict(attrs))
def links(url):
    p = P(); p.feed(urllib.request.urlopen(url).read().decode()); return p.links
out = []
for a in links(base + "/simple/"):
    page = urllib.parse.urljoin(base + "/simple/", a["href"])
    for f in links(page):
        url, _, frag = f["href"].partition("#")
        name = urllib.parse.unquote(url.rsplit("/", 1)[1])
        out.append(f"{name} {frag.removeprefix('sha256=')}")
print("\n".join(sorted(out)))
EOF
check "HTML index lists every file with sha256 matching sha256sum" diff "$W/want.sums" "$W/html.sums"

c -D "$W/h.hdr" -o "$W/beta.html" "$B/simple/beta/"
check "HTML project page is text/html" grep -qi '^content-type: text/html' "$W/h.hdr"
check "HTML has repository-version meta" grep -q '<meta name="pypi:repository-version" content="1.1">' "$W/beta.html"
check "HTML data-requires-python is escaped" grep -q 'data-requires-python="&gt;=3.8"' "$W/beta.html"
BETA_META_SHA=$("$PY" -c '
import sys, zipfile, hashlib
print(hashlib.sha256(zipfile.ZipFile(sys.argv[1]).read("beta-2.0.dist-info/METADATA")).hexdigest())' \
  "$WHEELS/beta-2.0-py3-none-any.whl")
check "HTML data-core-metadata / data-dist-info-metadata" \
  grep -q "data-core-metadata=\"sha256=$BETA_META_SHA\" data-dist-info-metadata=\"sha256=$BETA_META_SHA\"" "$W/beta.html"
c -o "$W/alpha.html" "$B/simple/alpha/"
check "yanked file carries data-yanked with escaped reason" \
  grep -q "href=\"../../files/$YANKED#sha256=[0-9a-f]*\".*data-yanked=\"broken &lt;build&gt;\"" "$W/alpha.html"
same "only the yanked file has data-yanked" 1 "$(grep -c 'data-yanked' "$W/alpha.html")"
c -o "$W/paddle.html" "$B/simple/paddlestub/"
check "'+' in file names is percent-encoded in hrefs" grep -q 'files/paddlestub-2.6.1%2Bcu118-py3-none-any.whl#' "$W/paddle.html"
same "percent-encoded '+' file downloads" 200 "$(code "$B/files/paddlestub-2.6.1%2Bcu118-py3-none-any.whl")"
same "sdist-only project listed" 200 "$(code "$B/simple/onlysdist/")"

# ---- JSON (PEP 691) ---------------------------------------------------------
JSON_ACCEPT='application/vnd.pypi.simple.v1+json'
c -D "$W/j.hdr" -H "Accept: $JSON_ACCEPT" -o "$W/beta.json" "$B/simple/beta/"
check "JSON Content-Type" grep -qi "^content-type: application/vnd.pypi.simple.v1+json" "$W/j.hdr"
check "JSON project page: valid, hashes = sha256sum, metadata keys" "$PY" - "$W/beta.json" "$WHEELS" "$BETA_META_SHA" <<'EOF'
import hashlib, json, sys
doc = json.load(open(sys.argv[1]))
assert doc["meta"]["api-version"] == "1.1" and doc["name"] == "beta", doc
(f,) = doc["files"]
assert f["filename"] == "beta-2.0-py3-none-any.whl"
assert f["url"] == "../../files/beta-2.0-py3-none-any.whl"
assert f["hashes"]["sha256"] == hashlib.sha256(open(sys.argv[2] + "/" + f["filename"], "rb").read()).hexdigest()
assert f["requires-python"] == ">=3.8" and f["yanked"] is False
assert f["core-metadata"] == {"sha256": sys.argv[3]} == f["dist-info-metadata"]
assert doc["versions"] == ["2.0"]
EOF
c -H "Accept: $JSON_ACCEPT" -o "$W/alpha.json" "$B/simple/alpha/"
check "JSON: all hashes match, yanked reason, versions" "$PY" - "$W/alpha.json" "$W/want.sums" "$YANKED" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
want = dict(l.split() for l in open(sys.argv[2]))
assert len(doc["files"]) == 3
for f in doc["files"]:
    assert f["hashes"]["sha256"] == want[f["filename"]], f
    assert f["yanked"] == ("broken <build>" if f["filename"] == sys.argv[3] else False), f
assert doc["versions"] == ["1.0", "1.1", "2.0rc1"], doc["versions"]
EOF
check "JSON root index" "$PY" -c '
import json, sys, urllib.request
r = urllib.request.urlopen(urllib.request.Request(sys.argv[1], headers={"Accept": sys.argv[2]}))
doc = json.load(r)
names = [p["name"] for p in doc["projects"]]
assert "alpha" in names and "paddlestub" in names and "onlysdist" in names, names' "$B/simple/" "$JSON_ACCEPT"
ctype() { c -o /dev/null -w '%{content_type}' -H "Accept: $1" "$B/simple/alpha/" || true; }
same "pip-style Accept picks JSON" "$JSON_ACCEPT" \
  "$(ctype 'application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01')"
same "q-values honoured (html preferred)" "text/html; charset=utf-8" \
  "$(ctype 'application/vnd.pypi.simple.v1+json; q=0.2, text/html')"
same "q=0 JSON refused" "text/html; charset=utf-8" "$(ctype 'application/vnd.pypi.simple.v1+json;q=0')"
same "v1+html answered as v1+html" "application/vnd.pypi.simple.v1+html; charset=utf-8" \
  "$(ctype 'application/vnd.pypi.simple.v1+html')"
same "no Accept -> text/html" "text/html; charset=utf-8" \
  "$(c -o /dev/null -w '%{content_type}' "$B/simple/alpha/" || true)"

# ---- redirects, 404 ---------------------------------------------------------
same "non-normalized name redirects" "301 $B/simple/paddlestub/" \
  "$(c -o /dev/null -w '%{http_code} %{redirect_url}' "$B/simple/PaddleStub/" || true)"
same "separators normalized in redirect" "301 $B/simple/paddle-stub/" \
  "$(c -o /dev/null -w '%{http_code} %{redirect_url}' "$B/simple/Paddle_.Stub/" || true)"
same "missing trailing slash redirects" "301 $B/simple/alpha/" \
  "$(c -o /dev/null -w '%{http_code} %{redirect_url}' "$B/simple/alpha" || true)"
same "redirect followed lands on the page" 200 "$(code -L "$B/simple/ALPHA")"
same "unknown project 404" 404 "$(code "$B/simple/delta/")"
same "unknown file 404" 404 "$(code "$B/files/delta-1.0-py3-none-any.whl")"

# ---- find-links -------------------------------------------------------------
c -o "$W/fl.html" "$B/find-links.html"
check "find-links: absolute URLs with hashes for every file" "$PY" - "$W/fl.html" "$W/want.sums" "$B" <<'EOF'
import re, sys, urllib.parse
page = open(sys.argv[1]).read()
got = {}
for href in re.findall(r'<a href="([^"]+)"', page):
    url, _, frag = href.partition("#")
    assert url.startswith(sys.argv[3] + "/files/"), url
    got[urllib.parse.unquote(url.rsplit("/", 1)[1])] = frag.removeprefix("sha256=")
assert "data-" not in page
assert got == dict(l.split() for l in open(sys.argv[2])), got
EOF
same "/find-links/ also served" 200 "$(code "$B/find-links/")"

# ---- PEP 658 metadata ---------------------------------------------------------
c -o "$W/beta.metadata" "$B/files/beta-2.0-py3-none-any.whl.metadata"
"$PY" -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("beta-2.0.dist-info/METADATA"))' \
  "$WHEELS/beta-2.0-py3-none-any.whl" >"$W/beta.metadata.want"
check ".metadata equals METADATA inside the wheel" cmp "$W/beta.metadata" "$W/beta.metadata.want"
same ".metadata hash = advertised" "$BETA_META_SHA" "$(sha "$W/beta.metadata")"
same "sdist has no .metadata" 404 "$(code "$B/files/fastmath-1.0.tar.gz.metadata")"

# ---- files: Range, HEAD -------------------------------------------------------
BIG=bigwheel-1.0-py3-none-any.whl
BIGSIZE=$(stat -c %s "$WHEELS/$BIG")
c -D "$W/r.hdr" -H 'Range: bytes=1000000-' -o "$W/big.tail" "$B/files/$BIG"
tail -c +1000001 "$WHEELS/$BIG" >"$W/big.tail.want"
check "Range bytes=N- returns the tail" cmp "$W/big.tail" "$W/big.tail.want"
check "Range answer is 206 with Content-Range" grep -qi "^content-range: bytes 1000000-$((BIGSIZE - 1))/$BIGSIZE" "$W/r.hdr"
same "Range past end -> 416" 416 "$(code -H "Range: bytes=$BIGSIZE-" "$B/files/$BIG")"
c -o "$W/big.full" "$B/files/$BIG"
check "full download matches" cmp "$W/big.full" "$WHEELS/$BIG"
c -I -o "$W/head.hdr" "$B/files/$BIG"
check "HEAD sends Content-Length" grep -qi "^content-length: $BIGSIZE" "$W/head.hdr"

# ---- auth ---------------------------------------------------------------------
start_server auth --auth user:s3cret
A=http://127.0.0.1:$PORT_auth
c -D "$W/a.hdr" -o /dev/null "$A/simple/" || true
check "auth: refused without credentials" grep -q '^HTTP/1.1 401' "$W/a.hdr"
check "auth: WWW-Authenticate Basic realm" grep -qi '^www-authenticate: Basic realm="index"' "$W/a.hdr"
same "auth: wrong password refused" 401 "$(code -u user:nope "$A/simple/")"
same "auth: accepted with credentials" 200 "$(code -u user:s3cret "$A/simple/alpha/")"
same "auth: file download with credentials" 200 "$(code -u user:s3cret "$A/files/gamma-0.5-py3-none-any.whl")"

# ---- fail-first -----------------------------------------------------------------
start_server fail --fail-first 2
F=http://127.0.0.1:$PORT_fail
r=""
for _ in 1 2 3; do r+="$(code "$F/simple/gamma/") "; done
same "fail-first 2: 503,503,200" "503 503 200 " "$r"
c -D "$W/f.hdr" -o /dev/null "$F/files/gamma-0.5-py3-none-any.whl" || true
check "fail-first: Retry-After: 0 on 503" grep -qi '^retry-after: 0' "$W/f.hdr"
same "fail-first counts per path" "503 200" \
  "$(code "$F/files/gamma-0.5-py3-none-any.whl") $(code "$F/files/gamma-0.5-py3-none-any.whl")"

# ---- cut-first --------------------------------------------------------------------
start_server cut --cut-first 1
X=http://127.0.0.1:$PORT_cut
rc=0
c -o "$W/cut.part" "$X/files/$BIG" 2>/dev/null || rc=$?
same "cut-first: curl reports a partial transfer (18)" 18 "$rc"
GOT=$(stat -c %s "$W/cut.part")
same "cut-first: half the body arrived" $((BIGSIZE / 2)) "$GOT"
c -D "$W/cut.hdr" -H "Range: bytes=$GOT-" -o "$W/cut.rest" "$X/files/$BIG"
check "cut-first: resume is 206" grep -q '^HTTP/1.1 206' "$W/cut.hdr"
cat "$W/cut.part" "$W/cut.rest" >"$W/cut.joined"
same "cut-first: part + resumed tail hashes right" "$(sha "$WHEELS/$BIG")" "$(sha "$W/cut.joined")"
same "cut-first: .metadata is never cut" 200 "$(code "$X/files/alpha-1.1-py3-none-any.whl.metadata")"
check "cut-first: log shows the short body" grep -qx "GET /files/$BIG 200 $((BIGSIZE / 2)) -" "$W/cut.log"

# ---- tamper -----------------------------------------------------------------------
TAMPER=gamma-0.5-py3-none-any.whl
start_server tamper --tamper "$TAMPER"
T=http://127.0.0.1:$PORT_tamper
ADV=$(c "$T/simple/gamma/" | grep -o 'sha256=[0-9a-f]\{64\}' | head -1 | cut -d= -f2)
c -o "$W/tampered.whl" "$T/files/$TAMPER"
same "tamper: page advertises the original hash" "$(sha "$WHEELS/$TAMPER")" "$ADV"
if [[ $(sha "$W/tampered.whl") != "$ADV" ]]; then pass "tamper: served bytes do not match the advertised hash"
else fail "tamper: served bytes match the advertised hash"; fi
same "tamper: same size" "$(stat -c %s "$WHEELS/$TAMPER")" "$(stat -c %s "$W/tampered.whl")"
same "tamper: only the last byte differs" 1 "$(cmp -l "$WHEELS/$TAMPER" "$W/tampered.whl" | wc -l)"
TSIZE=$(stat -c %s "$WHEELS/$TAMPER")
same "tamper: also in a Range answer" "$(tail -c 1 "$W/tampered.whl" | od -An -tx1)" \
  "$(c -H "Range: bytes=$((TSIZE - 1))-" "$T/files/$TAMPER" | od -An -tx1)"

# ---- old mirror: --no-json --no-metadata ----------------------------------------------
start_server old --no-json --no-metadata
O=http://127.0.0.1:$PORT_old
same "--no-json: JSON Accept still gets HTML" "text/html; charset=utf-8" \
  "$(c -o /dev/null -w '%{content_type}' -H "Accept: $JSON_ACCEPT" "$O/simple/beta/" || true)"
if c "$O/simple/beta/" | grep -q 'metadata'; then fail "--no-metadata: metadata still advertised"
else pass "--no-metadata: metadata not advertised"; fi
same "--no-metadata: .metadata 404" 404 "$(code "$O/files/beta-2.0-py3-none-any.whl.metadata")"

# ---- access logs ---------------------------------------------------------------------
check "access log lines have the documented form" "$PY" - "$W"/{main,auth,fail,cut,tamper,old}.log <<'EOF'
import re, sys
n = 0
for path in sys.argv[1:]:
    for line in open(path):
        n += 1
        assert re.fullmatch(r"(GET|HEAD) /\S* [1-5]\d\d \d+ (bytes=\S+|-)\n", line), (path, line)
assert n > 50, n
EOF
check "log records a Range request" grep -qx "GET /files/$BIG 206 $((BIGSIZE - 1000000)) bytes=1000000-" "$W/main.log"
check "log records HEAD with 0 bytes" grep -qx "HEAD /files/$BIG 200 0 -" "$W/main.log"
check "log records 503s" grep -qx "GET /simple/gamma/ 503 10 -" "$W/fail.log"

# ---- clean shutdown ------------------------------------------------------------------
kill -TERM "$PID_main"
rc=0
wait "$PID_main" || rc=$?
same "SIGTERM: server exits 0" 0 "$rc"

echo "index-selftest: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 && $PASSED -gt 0 ]]
