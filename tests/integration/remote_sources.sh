#!/usr/bin/env bash
# Remote sources of files and data layers (a copy rule's url: with its sha256): models
# fetched over HTTP from a local server, checked while they stream, extracted (tar.gz
# with strip_components and include, zip) or copied as they are; cached by content (a
# rebuild, or another spec naming the same hash, downloads nothing); the same digest
# from two caches; provenance and SBOM name every download. Then the server misbehaves
# (slow, a cut answer that resumes, a lying one, a wrong size) and hostile archives
# (a ../ member, a symlink pointing out, an absolute path, a hard link out) are refused
# with the member named, nothing stored.
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
cd "$WORK"

# The files the server serves.
mkdir -p files src/ch_PP-OCRv4_det_infer/sub
printf 'det-model-%.0s' $(seq 1000) >src/ch_PP-OCRv4_det_infer/inference.pdmodel
head -c 300000 /dev/urandom >src/ch_PP-OCRv4_det_infer/inference.pdiparams
echo "{}" >src/ch_PP-OCRv4_det_infer/sub/config.json
echo "notes" >src/ch_PP-OCRv4_det_infer/README.txt
ln -s inference.pdmodel src/ch_PP-OCRv4_det_infer/model.link
tar -C src -czf files/det.tar.gz ch_PP-OCRv4_det_infer
(cd src && python3 -c "
import zipfile; z = zipfile.ZipFile('../files/dict.zip', 'w')
z.writestr('dict/ppocr_keys_v1.txt', 'a\nb\nc\n'); z.writestr('dict/extra/en.txt', 'x\n'); z.close()")
head -c 200000 /dev/urandom >files/tool.bin
head -c 4000000 /dev/urandom >files/big.bin
python3 - files <<'PY'
import io, os, sys, tarfile
d = sys.argv[1]
def tar(name, members):
    with tarfile.open(os.path.join(d, name), "w") as t:
        for m, data in members:
            if data is not None:
                m.size = len(data)
            t.addfile(m, io.BytesIO(data) if data is not None else None)
def f(name): return tarfile.TarInfo(name)
def sym(name, target):
    m = tarfile.TarInfo(name); m.type = tarfile.SYMTYPE; m.linkname = target; return m
def hard(name, target):
    m = tarfile.TarInfo(name); m.type = tarfile.LNKTYPE; m.linkname = target; return m
tar("dotdot.tar", [(f("m/ok.txt"), b"ok"), (f("m/../../escape.txt"), b"x")])
tar("symout.tar", [(f("m/ok.txt"), b"ok"), (sym("m/etc", "../../../etc"), None)])
tar("symabs.tar", [(sym("m/passwd", "/etc/passwd"), None)])
tar("through.tar", [(sym("m/d", "."), None), (f("m/d/x.txt"), b"x")])
tar("absolute.tar", [(f("/tmp/abs.txt"), b"x")])
tar("hardout.tar", [(f("m/ok.txt"), b"ok"), (hard("m/h", "../../etc/passwd"), None)])
PY
sha() { sha256sum "files/$1" | cut -d' ' -f1; }

# The server: GET (with Range) over files/; ?mode=slow trickles, cut sends half the first
# time, lie sends other bytes. It counts the requests per path.
python3 - files "$WORK/port.txt" "$WORK/requests.log" <<'PY' &
import http.server, os, socketserver, sys, time, urllib.parse
root, portfile, log = sys.argv[1:4]
cut_done = set()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def handle(self):
        try:
            super().handle()
        except ConnectionError:
            pass  # a client that gave up on a cut or lying answer
    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        name = os.path.basename(u.path)
        mode = u.path.split("/")[1] if u.path.count("/") > 1 else ""
        open(log, "a").write(u.path + "\n")
        p = os.path.join(root, name)
        if not os.path.isfile(p):
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
        data = open(p, "rb").read()
        if mode == "lie":
            data = b"X" * len(data)
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and mode != "lie":
            start = int(rng[6:].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if mode == "cut" and u.path not in cut_done:
            cut_done.add(u.path)
            self.wfile.write(body[: len(body) // 2]); self.wfile.flush()
            self.close_connection = True
            return
        if mode == "slow":
            for i in range(0, len(body), 16384):
                self.wfile.write(body[i:i + 16384]); self.wfile.flush(); time.sleep(0.02)
            return
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
with S(("127.0.0.1", 0), H) as s:
    open(portfile + ".tmp", "w").write(str(s.server_address[1])); os.rename(portfile + ".tmp", portfile)
    s.serve_forever()
PY
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; registry_stop_all' EXIT
for _ in $(seq 50); do [[ -s port.txt ]] && break; sleep 0.1; done
URL=http://127.0.0.1:$(cat port.txt)
requests() { grep -cE -- "$1" requests.log || true; }

echo "print('app')" >app.py
cat >spec.yaml <<YAML
base: scratch
source_date_epoch: 1700000000
layers:
  - name: models
    data:
      - url: $URL/f/det.tar.gz
        sha256: $(sha det.tar.gz)
        size: $(stat -c %s files/det.tar.gz)
        extract: true
        strip_components: 1
        include: ["inference.*", "sub", "model.link"]
        to: /opt/models/det
      - url: $URL/f/dict.zip
        sha256: $(sha dict.zip)
        extract: true
        to: /opt/models/
      - url: $URL/f/tool.bin
        sha256: $(sha tool.bin)
        to: /usr/local/bin/tool
        mode: 0755
  - name: app
    files:
      - {from: app.py, to: /app/app.py}
YAML
check "a spec with downloads builds" "$PI" build spec.yaml -o oci:img:v1
check "... each file was downloaded once" test "$(requests /f/det.tar.gz)" = 1 -a "$(requests /f/dict.zip)" = 1
umoci unpack --image img:v1 bundle >/dev/null 2>&1
R=bundle/rootfs
check "... the tar.gz is extracted under its target, strip_components 1" \
  cmp $R/opt/models/det/inference.pdiparams src/ch_PP-OCRv4_det_infer/inference.pdiparams
check "... include keeps what it names (a directory with what lies below, a link)" \
  bash -c "test -f $R/opt/models/det/sub/config.json && test \"\$(readlink $R/opt/models/det/model.link)\" = inference.pdmodel"
check "... and leaves the rest out" test ! -e $R/opt/models/det/README.txt
check "... the zip is extracted" bash -c "test \"\$(cat $R/opt/models/dict/ppocr_keys_v1.txt)\" = \$'a\nb\nc' && test -f $R/opt/models/dict/extra/en.txt"
check "... the file is copied as it is, with its rule's mode" \
  bash -c "cmp $R/usr/local/bin/tool files/tool.bin && test \"\$(stat -c %a $R/usr/local/bin/tool)\" = 755"
check "... file times are SOURCE_DATE_EPOCH" test "$(stat -c %Y $R/opt/models/det/inference.pdmodel)" = 1700000000

check "a rebuild downloads nothing and gives the same image" "$PI" build spec.yaml -o oci:img2:v1
check "... no request was sent" test "$(requests /f/)" = 3
check "... the same digest" test "$(manifest_digest img v1)" = "$(manifest_digest img2 v1)"
check "a fresh cache builds the same digest" "$PI" build spec.yaml --cache-dir c2 -o oci:img3:v1
check "... the same digest from both caches" test "$(manifest_digest img v1)" = "$(manifest_digest img3 v1)"

# Another spec naming the same hash (another URL) downloads nothing.
sed "s#$URL/f/det.tar.gz#$URL/cut/det.tar.gz#" spec.yaml >other.yaml
check "another URL with the same sha256 is taken from the cache" "$PI" build other.yaml -o oci:img4:v1
check "... without a request" test "$(requests /cut/)" = 0

# A slow server, then one that cuts the answer: the download resumes.
sed "s#$URL/f/#$URL/slow/#" spec.yaml >slow.yaml
check "a slow server: the build completes" "$PI" build slow.yaml --cache-dir c4 -o oci:slow:v1
check "... the same digest" test "$(manifest_digest img v1)" = "$(manifest_digest slow v1)"
sed "s#$URL/f/#$URL/cut/#" spec.yaml >cut.yaml
check "a server that cuts the answer: the download resumes" "$PI" build cut.yaml --cache-dir c5 -o oci:cut:v1
check "... the same digest" test "$(manifest_digest img v1)" = "$(manifest_digest cut v1)"

# Interrupted while the download streams (SIGINT): exit 130, nothing of it left in the
# cache; the next build downloads it whole.
cat >big.yaml <<YAML
base: scratch
layers:
  - name: big
    data:
      - {url: $URL/slow/big.bin, sha256: $(sha big.bin), to: /opt/big.bin}
YAML
set -m # its own process group, SIGINT not ignored as a background job's is
"$PI" build big.yaml --cache-dir cbig -o oci:big:v1 >big.log 2>&1 &
pid=$!
set +m
for _ in $(seq 100); do grep -q "downloading" big.log && break; sleep 0.1; done
sleep 0.5
kill -INT $pid
rc=0; wait $pid || rc=$?
check "SIGINT during a download: exit 130" test "$rc" = 130
check "... nothing of it was kept (no blob, no temporary file)" bash -c \
  "! ls cbig/blobs/sha256/ 2>/dev/null | grep -q '$(sha big.bin)' && test -z \"\$(find cbig -type f -name '*tmp*' -o -name '*-source-*' | head -1)\""
sed -i "s#$URL/slow/big.bin#$URL/f/big.bin#" big.yaml
check "... the next build downloads it whole" "$PI" build big.yaml --cache-dir cbig -o oci:big:v1
check "... and the file is the one served" bash -c "test \"\$(sha256sum cbig/blobs/sha256/$(sha big.bin) | cut -c1-64)\" = $(sha big.bin)"

# A lying server: other bytes than the pinned hash. Exit 8, the URL and both digests, nothing stored.
sed "s#$URL/f/tool.bin#$URL/lie/tool.bin#" spec.yaml >lie.yaml
expect_fail "other bytes than the sha256: exit 8, the URL and both digests named" 8 \
  "lie/tool.bin.*expected sha256:$(sha tool.bin).*got sha256:[0-9a-f]{64}" "$PI" build lie.yaml --cache-dir c6 -o oci:lie:v1
check "... nothing stored for it" bash -c "! grep -rl '$(sha tool.bin)' c6/keys 2>/dev/null | grep -q . && ! test -e lie"
sed "s#size: $(stat -c %s files/det.tar.gz)#size: 10#" spec.yaml >size.yaml
expect_fail "more bytes than the size given: exit 8" 8 "sends more than 10 bytes" \
  "$PI" build size.yaml --cache-dir c7 -o oci:size:v1
sed "s#$URL/f/tool.bin#$URL/f/missing.bin#" spec.yaml >missing.yaml
sed -i "s#sha256: $(sha tool.bin)#sha256: $(printf x | sha256sum | cut -d' ' -f1)#" missing.yaml
expect_fail "a 404: exit 7, the rule's line and the URL named" 7 "missing.yaml:[0-9]+:[0-9]+: .*missing.bin.*404" \
  "$PI" build missing.yaml --cache-dir c8 -o oci:missing:v1
check "... with the hint to check the URL" grep -q "hint: check the URL: the server has no such file" err.txt

# Hostile archives: refused with the member named, exit 8, nothing written outside.
hostile() { # NAME PATTERN
  cat >h-$1.yaml <<YAML
base: scratch
layers:
  - name: models
    data:
      - {url: $URL/f/$1.tar, sha256: $(sha $1.tar), extract: true, to: /opt/m}
YAML
  expect_fail "$1.tar is refused: $2" 8 "$2" "$PI" build h-$1.yaml --cache-dir ch -o oci:h:v1
}
hostile dotdot "member 'm/../../escape.txt' climbs out"
hostile symout "member 'm/etc' is a symlink to '../../../etc', which points out"
hostile symabs "member 'm/passwd' is a symlink to the absolute path"
hostile through "member 'm/d/x.txt' is written through the symlink"
hostile absolute "member '/tmp/abs.txt' has an absolute path"
hostile hardout "member 'm/h' is a hard link to '../../etc/passwd', which points out"
check "... nothing escaped" bash -c "test ! -e ch/escape.txt -a ! -e /tmp/abs.txt -a ! -e escape.txt && ! ls ch/sources/*/tree >/dev/null 2>&1"

# Spec errors: file:line:field and the fix.
printf 'base: scratch\nlayers:\n  - name: m\n    data:\n      - {url: %s/f/tool.bin, to: /x}\n' "$URL" >nosha.yaml
expect_fail "a url without sha256: the line and the fix" 3 "nosha.yaml:5.*sha256" "$PI" build nosha.yaml -o oci:n:v1
printf 'base: scratch\nlayers:\n  - name: m\n    data:\n      - {url: "http://u:s3cr3tpw@127.0.0.1/x", sha256: %s, to: /x}\n' "$(sha tool.bin)" >cred.yaml
expect_fail "credentials in the URL are refused" 3 "carries credentials" "$PI" build cred.yaml -o oci:n:v1
check "... and never printed" bash -c "test -s err.txt && ! grep -q s3cr3tpw err.txt"
printf 'base: scratch\nlayers:\n  - name: m\n    data:\n      - {url: "ftp://h/x", sha256: %s, to: /x, strip_components: 1}\n' "$(sha tool.bin)" >ftp.yaml
expect_fail "an ftp URL is refused" 3 "not an http" "$PI" build ftp.yaml -o oci:n:v1

# Provenance and SBOM: every download by its URL and SHA-256.
export COSIGN_PASSWORD=remote-test-passphrase
check "a key for --sign" "$PI" key generate -o k
check "build --sign attaches provenance and an SBOM" "$PI" build spec.yaml -q -o oci:signed:v1 --sign --key k.key \
  --identity registry.example/team/ocr:v1
attestation_statements signed v1 >signed.statements
check "the provenance lists each download (role download) with its URL and SHA-256" python3 - signed.statements "$URL" \
  "$(sha det.tar.gz)" "$(sha dict.zip)" "$(sha tool.bin)" <<'PY'
import json, sys
statements, url = sys.argv[1:3]
want = set(sys.argv[3:])
deps = []
sbom = None
for line in open(statements):
    st = json.loads(line)
    if st["predicateType"] == "https://slsa.dev/provenance/v1":
        deps = [d for d in st["predicate"]["buildDefinition"]["resolvedDependencies"] if d.get("annotations", {}).get("role") == "download"]
    elif "spdx" in st["predicateType"]:
        sbom = st["predicate"]
assert {d["digest"]["sha256"] for d in deps} == want, deps
assert all(d["uri"].startswith(url + "/f/") for d in deps), deps
assert sbom is not None
refs = [r["referenceLocator"] for p in sbom["packages"] for r in p.get("externalRefs", [])]
for h in want:
    assert any(r.startswith("pkg:generic/") and ("checksum=sha256:" + h) in r for r in refs), (h, refs)
PY

# A git source at a commit: exported without .git, the commit's tree (not the branch's
# tip), modes from git (0755 kept), include; fetched once.
g() { git -C repo -c user.name=t -c user.email=t@example.com "$@"; }
git init -q repo
mkdir -p repo/ppocr/utils repo/tools
echo "v1" >repo/ppocr/version.txt
printf '#!/bin/sh\necho run\n' >repo/tools/run.sh
chmod 0755 repo/tools/run.sh
echo "docs" >repo/README.md
g add -A && g commit -q -m one
C1=$(g rev-parse HEAD)
echo "v2" >repo/ppocr/version.txt
g commit -q -am two
cat >git.yaml <<YAML
base: scratch
source_date_epoch: 1700000000
layers:
  - name: code
    files:
      - git: file://$WORK/repo
        commit: $C1
        include: [ppocr, tools]
        to: /app/PaddleOCR
YAML
check "a git source builds" bash -c "'$PI' build git.yaml -o oci:git:v1 2>git.log"
rm -rf gbundle && umoci unpack --image git:v1 gbundle >/dev/null 2>&1
check "... the commit's tree, not the branch tip's" test "$(cat gbundle/rootfs/app/PaddleOCR/ppocr/version.txt)" = v1
check "... git's modes kept (0755), include leaves the rest out, no .git" bash -c \
  "test \"\$(stat -c %a gbundle/rootfs/app/PaddleOCR/tools/run.sh)\" = 755 && test ! -e gbundle/rootfs/app/PaddleOCR/README.md && test ! -e gbundle/rootfs/app/PaddleOCR/.git"
check "a rebuild fetches nothing, the same image" bash -c "'$PI' build git.yaml -o oci:git2:v1 2>git2.log && ! grep -q fetching git2.log"
check "... the same digest" test "$(manifest_digest git v1)" = "$(manifest_digest git2 v1)"
check "a fresh cache gives the same digest" "$PI" build git.yaml --cache-dir cg -o oci:git3:v1
check "... the same digest" test "$(manifest_digest git v1)" = "$(manifest_digest git3 v1)"
sed "s/commit: $C1/commit: $(printf x | sha1sum | cut -c1-40)/" git.yaml >nocommit.yaml
expect_fail "a commit the repository lacks: exit 3, named" 3 "no such commit" \
  "$PI" build nocommit.yaml --cache-dir cg2 -o oci:nc:v1
sed "s/commit: $C1/commit: master/" git.yaml >branch.yaml
expect_fail "a branch name for commit: refused with the fix" 3 "branch.yaml:7.*not a full commit" \
  "$PI" build branch.yaml -o oci:nc:v1
check "build --sign: provenance names the repository and commit, the SBOM its purl" bash -c \
  "'$PI' build git.yaml -q -o oci:gsigned:v1 --sign --key k.key --identity registry.example/team/ocr:v1"
attestation_statements gsigned v1 >gsigned.statements
check "... (checked)" python3 - gsigned.statements "$C1" <<'PY'
import json, sys
statements, commit = sys.argv[1:3]
for line in open(statements):
    st = json.loads(line)
    if st["predicateType"] == "https://slsa.dev/provenance/v1":
        deps = [d for d in st["predicate"]["buildDefinition"]["resolvedDependencies"] if d.get("annotations", {}).get("role") == "git"]
        assert len(deps) == 1 and deps[0]["digest"] == {"gitCommit": commit}, deps
        assert deps[0]["uri"].startswith("git+file://"), deps
    elif "spdx" in st["predicateType"]:
        refs = [r["referenceLocator"] for p in st["predicate"]["packages"] for r in p.get("externalRefs", [])]
        assert any(r.startswith("pkg:generic/repo@" + commit + "?vcs_url=") for r in refs), refs
PY
check "render dockerfile writes ADD of the repository at its commit" bash -c \
  "'$PI' render dockerfile git.yaml | grep -qF '#$C1\", \"/app/PaddleOCR\"]'"

check "render dockerfile writes ADD --checksum for each download" bash -c \
  "'$PI' render dockerfile spec.yaml | grep -q 'ADD --checksum=sha256:$(sha tool.bin)'"
before=$(wc -l <requests.log)
check "cache prune drops the laid-out sources" bash -c "'$PI' cache prune --max-size 100G >/dev/null && test ! -e cache/sources"
check "... a build finds the layer by its pins: nothing laid out again, the same image" bash -c \
  "'$PI' build spec.yaml -o oci:img5:v1 2>prune.log && ! grep -q unpacked prune.log && test ! -e cache/sources"
check "... without a request" test "$(wc -l <requests.log)" = "$before"
check "... the same digest" test "$(manifest_digest img v1)" = "$(manifest_digest img5 v1)"

# A fresh runner with the registry cache: the layer of downloads is found by its pins
# (the hash and the rule), so nothing is downloaded from the file's server at all.
registry_start reg open "$WORK/srv" >/dev/null
RC=$REG_HOST/team/ocr/cache
check "a build stores its layers in the registry cache" "$PI" build spec.yaml --cache-dir rc1 -o oci:r1:v1 --cache-to "$RC"
before=$(wc -l <requests.log)
check "a fresh cache with the registry cache builds the same image" bash -c \
  "'$PI' build spec.yaml --cache-dir rc2 -o oci:r2:v1 --cache-from '$RC' --json >r2.json 2>r2.err"
check "... without a request to the files' server" test "$(wc -l <requests.log)" = "$before"
check "... the downloads' layer came from the registry cache" /usr/bin/python3 -c "
import json, sys; j = json.load(open('r2.json'))
m = [l for l in j['layers'] if l['name'] == 'models'][0]
assert m['status'] == 'reused' and 'cache' in m, m
assert {s['sha256'] for s in m['sources']} == set(sys.argv[1:]) and not any(s['downloaded'] for s in m['sources']), m
" "$(sha det.tar.gz)" "$(sha dict.zip)" "$(sha tool.bin)"
check "... the same digest" test "$(manifest_digest img v1)" = "$(manifest_digest r2 v1)"

# paddle-image lock --sources: a spec that leaves the sha256s and the commit open. The
# build refuses it until the lock pins them; the lock fetches each file once (kept in
# the cache: the build then sends no request) and resolves the ref with git ls-remote.
BR=$(git -C repo symbolic-ref --short HEAD)
C2=$(g rev-parse HEAD)
g tag -a v1 -m "release one" "$C1"
grep -v '^ *sha256:' spec.yaml >open.yaml # the same downloads, their sha256 left open
cat >>open.yaml <<YAML
  - name: code
    files:
      - {git: file://$WORK/repo, ref: $BR, include: [ppocr, tools], to: /app/PaddleOCR}
      - {git: file://$WORK/repo, ref: v1, include: [ppocr], to: /app/v1}
YAML
expect_fail "a build of unpinned sources is refused before anything is fetched: the line and the lock command" 3 \
  "open.yaml:6.*has no sha256 in the spec or in open.sources.lock \\(and 4 more" \
  "$PI" build open.yaml --cache-dir cl -o oci:open:v1
check "... the hint is the lock command" grep -q "hint: run paddle-image lock --sources --spec open.yaml" err.txt
before=$(requests /f/)
check "lock --sources pins every open source" bash -c "'$PI' lock --sources --spec open.yaml --cache-dir cl --json >lock.json"
check "... each file was fetched once" test "$(requests /f/)" = "$((before + 3))"
check "... the lock holds each file's sha256 and size, the branch's tip and the annotated tag's commit" \
  /usr/bin/python3 - open.sources.lock "$URL" "$(sha det.tar.gz)" "$(sha dict.zip)" "$(sha tool.bin)" \
  "$(stat -c %s files/tool.bin)" "$C2" "$C1" "$BR" <<'PY'
import json, sys
lock, url, det, dic, tool, tool_size, c2, c1, br = sys.argv[1:]
j = json.load(open(lock))
assert j["lockVersion"] == 1
d = {e["url"]: e for e in j["downloads"]}
assert d[url + "/f/det.tar.gz"]["sha256"] == det and d[url + "/f/dict.zip"]["sha256"] == dic, d
assert d[url + "/f/tool.bin"] == {"url": url + "/f/tool.bin", "sha256": tool, "size": int(tool_size)}, d
g = {e["ref"]: e["commit"] for e in j["git"]}
assert g == {br: c2, "v1": c1}, g
PY
before=$(wc -l <requests.log)
check "the build with the lock sends no request" bash -c "'$PI' build open.yaml --cache-dir cl -o oci:open:v1 2>open.log"
check "... (none)" test "$(wc -l <requests.log)" = "$before"
check "... the downloads' layer is the one the spec with its own pins made" \
  test "$(layer_digests open v1 | head -1)" = "$(layer_digests img v1 | head -1)"
rm -rf obundle && umoci unpack --image open:v1 obundle >/dev/null 2>&1
check "... the branch's tip and the tag's tree" bash -c \
  "test \"\$(cat obundle/rootfs/app/PaddleOCR/ppocr/version.txt)\" = v2 && test \"\$(cat obundle/rootfs/app/v1/ppocr/version.txt)\" = v1"
cp open.sources.lock open.sources.lock.first
before=$(requests /f/)
check "lock again keeps the pins: no request, the same file" bash -c \
  "'$PI' lock --sources --spec open.yaml --cache-dir cl -q && cmp open.sources.lock open.sources.lock.first"
check "... (no request)" test "$(requests /f/)" = "$before"
echo "v3" >repo/ppocr/version.txt
g commit -q -am three
check "the branch moves: the lock keeps its commit" bash -c \
  "'$PI' lock --sources --spec open.yaml --cache-dir cl -q && cmp open.sources.lock open.sources.lock.first"
check "... lock --update resolves it again and fetches the files again" bash -c \
  "'$PI' lock --sources --update --spec open.yaml --cache-dir cl -q && grep -q \"\$(git -C repo rev-parse HEAD)\" open.sources.lock"
check "... (three requests)" test "$(requests /f/)" = "$((before + 3))"
sed "s#$URL/f/tool.bin#$URL/f/gone.bin#" open.yaml >gone.yaml
expect_fail "lock --sources of a URL the server lacks: exit 7, the line named, no lock written" 7 \
  "gone.yaml:[0-9]+:[0-9]+: .*gone.bin.*404" "$PI" lock --sources --spec gone.yaml --cache-dir cl
check "... (no gone.sources.lock)" test ! -e gone.sources.lock
sed "s/ref: v1,/ref: v9,/" open.yaml >badref.yaml
expect_fail "a ref the repository lacks: exit 3, named" 3 "has no branch or tag 'v9'" \
  "$PI" lock --sources --spec badref.yaml --cache-dir cl
printf '{"lockVersion": 1, "downloads": [{"url": "x", "sha256": "zz"}]}' >open.sources.lock
expect_fail "a damaged lock: exit 3, the file and the entry named" 3 "open.sources.lock: downloads\\[0\\].sha256" \
  "$PI" build open.yaml --cache-dir cl -o oci:open:v2
finish
