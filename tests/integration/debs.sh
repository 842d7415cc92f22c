#!/usr/bin/env bash
# debs layers end to end: `lock` verifies a signed apt repository (real Debian packages,
# tests/support/make-debs-repo.sh) and lets apt resolve against the base's dpkg status;
# the build installs exactly the lock; the image runs under runc, the libraries load,
# dpkg and apt see the packages, the SBOM lists them. Then what must be refused: a
# tampered package, index or signature, the wrong key, a maintainer script, a stale
# lock. Last, Debian's own signed index for the suite (fetched with the fixtures).
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
REPO=$FIXTURES/debs-repo
cd "$WORK"

debian_base_spec base.yaml
check "base image builds from the rootfs" "$PI" build base.yaml -q -o oci:base:bookworm

# The fixture repository over HTTP on 127.0.0.1 (the test's own copy, so it can be spoiled).
cp -r "$REPO/repo" served
python3 - served "$WORK/port.txt" <<'PY' &
import http.server, os, socketserver, sys
os.chdir(sys.argv[1])
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
with socketserver.TCPServer(("127.0.0.1", 0), Quiet) as s:
    open(sys.argv[2] + ".tmp", "w").write(str(s.server_address[1])); os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    s.serve_forever()
PY
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s port.txt ]] && break; sleep 0.1; done
URL=http://127.0.0.1:$(cat port.txt)

spec() { # FILE PACKAGES [URL] [KEYRING]
  cat >"$1" <<YAML
base: oci:base:bookworm
source_date_epoch: 1700000000
compression: {format: gzip, level: 1}   # 150 MB unpacked, built several times: cheap to compress (umoci reads gzip)
layers:
  - name: system
    debs:
      packages: [$2]
      repositories:
        - url: ${3:-$URL}
          suite: bookworm
          components: [main]
          keyring: ${4:-$REPO/keyring.gpg}
      lock: ${1%.yaml}.lock
  - name: app
    files:
      - {from: app.py, to: /app/app.py}
config:
  cmd: [python3, /app/app.py]
YAML
}
cat >app.py <<'PY'
import ctypes
ctypes.CDLL("libGL.so.1")
ctypes.CDLL("libtcl8.6.so")
import async_timeout
print("loaded libGL, libtcl and async_timeout")
PY
spec gl.yaml "libgl1, tcl-signal, python3-async-timeout"
check "lock resolves the layer with apt against the base" "$PI" lock --spec gl.yaml --layer system
pkgs() { python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(open(sys.argv[1]))["packages"]))' "$1"; }
check "the lock holds libgl1's closure (libglx0, libglvnd0, libx11-6, libgl1-mesa-dri)" \
  bash -c "for p in libgl1 libglx0 libglvnd0 libx11-6 libgl1-mesa-dri; do grep -qw \$p <<<'$(pkgs gl.lock)'; done"
check "an alternative: tcl-signal's 'libtcl8.6 | libtcl' brings libtcl8.6" grep -qw libtcl8.6 <<<"$(pkgs gl.lock)"
check "an alternative the base satisfies (python3 >> 3.8) brings nothing" \
  bash -c "! grep -qw python3-typing-extensions <<<'$(pkgs gl.lock)'"
check "what the base has (libc6, libexpat1) is not installed again" \
  bash -c "! grep -qwE 'libc6|libexpat1' <<<'$(pkgs gl.lock)'"
check "every locked package has its SHA-256 and size" python3 -c '
import json,sys
for p in json.load(open("gl.lock"))["packages"]:
    assert len(p["sha256"]) == 64 and p["size"] > 0 and p["filename"].startswith("pool/"), p'
cp gl.lock gl.lock.first
check "a second lock writes the same file" bash -c "'$PI' lock --spec gl.yaml -q && cmp gl.lock gl.lock.first"

check "the image builds from the lock" bash -c "'$PI' build gl.yaml -o oci:img:v1 2>build.log"
n=$(python3 -c 'import json; print(len(json.load(open("gl.lock"))["packages"]))')
check "the build fetched the $n packages over HTTP" grep -q "debs: $n downloaded" build.log
umoci unpack --image img:v1 bundle >/dev/null 2>&1
check "the image runs under runc and the libraries load" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle python3 /app/app.py | grep -q 'loaded libGL'"
ours=$(pkgs gl.lock)
check "dpkg --verify of the installed packages is clean" bash -c \
  "source '$SUPPORT/container.sh'; out=\$(run_in_bundle bundle dpkg --verify $ours); [[ -z \$out ]] || { echo \"\$out\"; false; }"
check "dpkg -s says install ok installed" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle dpkg -s libgl1 | grep -qx 'Status: install ok installed'"
check "dpkg -L lists the package's files" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle dpkg -L libgl1 | grep -q 'libGL.so.1'"
check "apt sees a consistent system (apt-get check, dpkg --audit)" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle sh -c 'apt-get check -q && test -z \"\$(dpkg --audit)\"'"
check "the base's packages are still in the status" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle dpkg -s libc6 | grep -qx 'Status: install ok installed'"
check "file times are source_date_epoch's" bash -c \
  "[[ \$(stat -c %Y bundle/rootfs/usr/lib/x86_64-linux-gnu/libGL.so.1.7.0) == 1700000000 ]]"
check "the SBOM lists the packages with their purls" bash -c \
  "'$PI' sbom oci:img:v1 --format cyclonedx | grep -q 'pkg:deb/debian/libgl1@1.6.0-1?arch=amd64'"

# The layer is keyed by the lock: a rebuild fetches nothing, and another machine's
# cache (a fresh one here) gives the same digest.
check "a rebuild reuses the layer and fetches nothing" bash -c \
  "'$PI' build gl.yaml -o oci:img:v2 2>&1 | grep -q '(0 layer(s) rebuilt'"
# The sanitizer twin (PI_TWIN=asan) stops here with the builds of what was already
# built: another cache, the registry cache, signing. They parse no outside byte the
# first build did not; the Release run checks them, and asan.integration.registry_cache
# watches the registry cache's paths under the sanitizers. The refusals below (tampered
# packages, indices and signatures, maintainer scripts) run in both.
if [[ ${PI_TWIN:-} != asan ]]; then
check "another machine's cache (a fresh one) gives the same digest" bash -c \
  "PADDLE_IMAGE_CACHE='$WORK/cache2' '$PI' build gl.yaml -q -o oci:img2:v1"
check "... the same manifest digest" test "$(manifest_digest img v1)" = "$(manifest_digest img2 v1)"

# The registry cache stores the layer; a fresh runner with it fetches no package at all
# (the packages are moved out of the repository's reach first).
source "$SUPPORT/registry/registry.sh"
trap 'kill $SERVER 2>/dev/null || true; registry_stop_all' EXIT
registry_start reg open "$WORK/srv"
RC=$REG_HOST/team/debs/cache
check "--cache-to stores the debs layer in the registry cache" "$PI" build gl.yaml -q --cache-dir c-writer \
  -o oci:rc:v1 --cache-to "$RC"
mv served/pool pool.away
check "a fresh cache with --cache-from builds the image with the repository out of reach" bash -c \
  "'$PI' build gl.yaml --cache-dir c-fresh -o oci:rc2:v1 --cache-from '$RC' 2>rc.log"
check "... the debs layer came from the registry cache, no package was fetched" bash -c "! grep -q 'debs: ' rc.log"
check "... the same image" test "$(manifest_digest rc v1)" = "$(manifest_digest rc2 v1)"
mv pool.away served/pool

# Signed with provenance: every package by its URL and SHA-256.
export COSIGN_PASSWORD=debs-test-passphrase
check "a key for --sign" "$PI" key generate -o k
check "build --sign attaches provenance and an SBOM" "$PI" build gl.yaml -q -o oci:signed:v1 --sign --key k.key \
  --identity registry.example/team/gl:v1
attestation_statements signed v1 >signed.statements
check "the provenance lists each package (role deb) with its URL and SHA-256" python3 - signed.statements gl.lock <<'PY'
import json, sys, urllib.parse
statements, lock = sys.argv[1:3]
for line in open(statements):
    st = json.loads(line)
    if st["predicateType"] == "https://slsa.dev/provenance/v1":
        deps = [d for d in st["predicate"]["buildDefinition"]["resolvedDependencies"] if d.get("annotations", {}).get("role") == "deb"]
want = {p["sha256"]: p for p in json.load(open(lock))["packages"]}
assert len(deps) == len(want), (len(deps), len(want))
for d in deps:
    p = want[d["digest"]["sha256"]]
    assert urllib.parse.unquote(d["uri"]).endswith("/" + p["filename"]), (d, p)
    assert d["annotations"]["package"] == p["name"] and d["annotations"]["version"] == p["version"], d
PY
fi

# A maintainer script that does something: refused with the package and the reason.
spec lua.yaml "lua5.1"
check "lua5.1 locks" "$PI" lock --spec lua.yaml -q
expect_fail "lua5.1's postinst (update-alternatives) is refused: exit 3" 3 "lua5.1.*postinst.*update-alternatives" \
  "$PI" build lua.yaml -q -o oci:lua:v1

# A lock that no longer answers the spec.
spec stale.yaml "libgl1"
cp gl.lock stale.lock
expect_fail "a lock for other packages is refused: exit 3, lock again" 3 "lock it again" "$PI" build stale.yaml -q -o oci:s:v1

# Tampering: a package, an index, a signature, the key.
deb=$(ls served/pool/main/libgl1_*.deb)
cp "$deb" libgl1.orig
printf 'X' | dd of="$deb" bs=1 seek=2000 conv=notrunc status=none
rm -rf cache3
expect_fail "a tampered package is refused: exit 8, the URL and both digests" 8 \
  "libgl1.*has sha256 [0-9a-f]{64}.*the lock .* gives [0-9a-f]{64}" \
  env PADDLE_IMAGE_CACHE="$WORK/cache3" "$PI" build gl.yaml -q -o oci:bad:v1
check "nothing of the tampered package stays in the cache" bash -c \
  "! grep -rqs '$(sha256sum "$deb" | cut -d' ' -f1)' <(ls -R cache3 2>/dev/null)"
cp libgl1.orig "$deb"
cp gl.lock gl.lock.keep
xz -dc served/dists/bookworm/main/binary-amd64/Packages.xz | sed 's/^Version: 1.6.0-1$/Version: 1.6.0-9/' | xz >p.xz
cp served/dists/bookworm/main/binary-amd64/Packages.xz packages.orig
mv p.xz served/dists/bookworm/main/binary-amd64/Packages.xz
expect_fail "a tampered index is refused: exit 8, naming the file and the fix" 8 \
  "Packages.xz: sha256 .* but the signed InRelease lists" "$PI" lock --spec gl.yaml -q
check "the lock was not touched" cmp gl.lock gl.lock.keep
cp packages.orig served/dists/bookworm/main/binary-amd64/Packages.xz
cp served/dists/bookworm/InRelease inrelease.orig
sed -i 's/^Suite: bookworm$/Suite: trixie/' served/dists/bookworm/InRelease
expect_fail "a changed InRelease fails its signature: exit 8" 8 "InRelease: its signature is bad" \
  "$PI" lock --spec gl.yaml -q
cp inrelease.orig served/dists/bookworm/InRelease
spec otherkey.yaml "libgl1" "$URL" "$REPO/other-keyring.gpg"
expect_fail "a repository signed by a key the keyring lacks: exit 8" 8 "signed by a key that .*other-keyring.gpg does not hold" \
  "$PI" lock --spec otherkey.yaml -q
check "no lock was written for it" test ! -e otherkey.lock
mv served/dists/bookworm/InRelease inrelease.moved
check "without InRelease, Release + Release.gpg verify" "$PI" lock --spec gl.yaml -q
mv served/dists/bookworm/Release.gpg release-gpg.moved
expect_fail "a Release with neither InRelease nor Release.gpg is unsigned: exit 8, not a 404" 8 \
  "Release: the repository is not signed" "$PI" lock --spec gl.yaml -q
mv release-gpg.moved served/dists/bookworm/Release.gpg
mv inrelease.moved served/dists/bookworm/InRelease
spec missing.yaml "no-such-package-here"
expect_fail "an unknown package: exit 3 with apt's reason" 3 "Unable to locate package no-such-package-here" \
  "$PI" lock --spec missing.yaml -q

# Debian's own archive for the suite: its real InRelease (Debian's keys) and index,
# served locally. libgl1 resolves to the same file the fixture repository holds.
DEBIAN_URL=$URL/debian-archive
ln -s "$REPO/debian" served/debian-archive
spec real.yaml "libgl1" "$DEBIAN_URL" /usr/share/keyrings/debian-archive-keyring.gpg
check "lock against Debian's signed index verifies with Debian's keyring" "$PI" lock --spec real.yaml -q
check "Debian's index gives libgl1 the SHA-256 of the fixture's libgl1 (apt-get download)" python3 -c '
import json,hashlib,glob
p=[p for p in json.load(open("real.lock"))["packages"] if p["name"]=="libgl1"][0]
f=glob.glob("served/pool/main/libgl1_*.deb")[0]
assert p["version"] in f.replace("%3a",":"), (p, f)
assert hashlib.sha256(open(f,"rb").read()).hexdigest()==p["sha256"], p'
check "the real lock's closure matches the fixture repository's for libgl1" bash -c \
  "diff <(tr ' ' '\n' <<<'$(pkgs real.lock)' | sort) <('$PI' lock --spec stale.yaml -o - -q | python3 -c 'import json,sys; print(\"\n\".join(sorted(p[\"name\"] for p in json.load(sys.stdin)[\"packages\"])))')"
finish
