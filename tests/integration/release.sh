#!/usr/bin/env bash
# scripts/release.sh: the self-contained archive, its checksums and signatures. The
# archive is unpacked into a minimal Debian 12 (the suite's debootstrap rootfs through
# an overlay, with OpenSSL, libstdc++ and every library the archive carries removed),
# where it must run, resolve every library from itself and build the bundled example.
# Then paddle-image's own image (release.sh --image) on a local stand-in for
# debian:12-slim: reproducible, signed, run with runc and podman. The README's own
# verification lines are run against the release, and the archive's install.sh is
# tried in the minimal Debian 12.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
cd "$WORK"
export PODMAN_TMP=$WORK/podman
trap 'podman_cleanup 2>/dev/null || true' EXIT
CC=(python3 "$SUPPORT/cosign_check.py")
export COSIGN_PASSWORD=release-test
# The test runs in parts, each its own CTest test (integration.release.PART), side by
# side once the first has packaged the release:
#   release.sh [PART]   dist (package, sign, package again), repro (two checkouts),
#                       checks (README lines, SBOMs, provenance, .deb, archive),
#                       chroot (the archive and the .deb on a minimal Debian 12),
#                       image (paddle-image's own image); no PART: all, in order
# The parts after dist read its release from RELEASE_DIST (the dist part's work
# directory; by default ../release-dist beside this one).
PART=${1:-all}
case $PART in all | dist | repro | checks | chroot | image) ;; *) echo "release.sh: unknown part '$PART'" >&2; exit 2 ;; esac
part() { [[ $PART == all || $PART == "$1" ]]; }
# The release build sits beside the suite's Release build (build/), at the same depth,
# so ccache finds every object that build compiled with the same flags: the test
# compiles paddle-image once, not again (release.sh's own default directory).
RB=$ROOT/build-release
if part dist; then
rm -rf dist dist2 rel.key rel.pub
"$PI" key generate -o rel >/dev/null 2>&1
check "release.sh builds the archive, the .deb, SHA256SUMS and signatures (a test key: --pub names its public half)" \
  bash "$ROOT/scripts/release.sh" --out dist --build "$RB" --key rel.key --pub rel.pub --deb
else
  # The dist part's release and key, copied (a part may change its copy: tampering).
  RELEASE_DIST=${RELEASE_DIST:-$(dirname "$WORK")/release-dist}
  if [[ ! -s $RELEASE_DIST/rel.pub || ! -d $RELEASE_DIST/dist ]]; then
    fail "no release in $RELEASE_DIST (integration.release.dist makes it)"
    finish || exit 1
  fi
  rm -rf dist dist2 && cp -a "$RELEASE_DIST/dist" "$RELEASE_DIST/dist2" "$RELEASE_DIST/rel.key" "$RELEASE_DIST/rel.pub" .
fi
A=$(ls dist/paddle-image-*-linux-amd64.tar.gz 2>/dev/null | head -1)
NAME=$(basename "$A" .tar.gz)
V=${NAME#paddle-image-}
V=${V%-linux-amd64}
DEB=dist/paddle-image_${V}-1_$(dpkg --print-architecture).deb
if part dist; then
check "it is named paddle-image-VERSION-linux-amd64.tar.gz" \
  bash -c "[[ '$NAME' == paddle-image-$("$PI" version --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')-linux-amd64 ]]"
check "SHA256SUMS checks" bash -c "cd dist && sha256sum -c --quiet SHA256SUMS"
check "the archive's signature verifies (verify-blob)" "$PI" verify-blob "$A" --key rel.pub --signature "$A.sig"
check "... and with the independent verifier" "${CC[@]}" verify-blob --key rel.pub --signature "$A.sig" --in "$A"
check "SHA256SUMS is signed too" "${CC[@]}" verify-blob --key rel.pub --signature dist/SHA256SUMS.sig --in dist/SHA256SUMS
check "dist/paddle-image.pub is the public key that signed it (--pub), not listed in SHA256SUMS" bash -c \
  "cmp dist/paddle-image.pub rel.pub && ! grep -q paddle-image.pub dist/SHA256SUMS"
expect_fail "a key that is not the release key is refused (no --pub), before anything is written" 2 \
  "rel.key is not the release key: its public half is not $ROOT/packaging/release/paddle-image.pub" \
  bash "$ROOT/scripts/release.sh" --out dist-wrongkey --build "$RB" --key rel.key --no-deb
check "... and dist-wrongkey was not made" test ! -e dist-wrongkey
check "the .deb is named paddle-image_VERSION-1_ARCH.deb and listed in SHA256SUMS" grep -q " $(basename "$DEB")\$" dist/SHA256SUMS
check "the .deb's signature verifies, with verify-blob and the independent verifier" bash -c \
  "'$PI' verify-blob '$DEB' --key rel.pub --signature '$DEB.sig' && ${CC[*]} verify-blob --key rel.pub --signature '$DEB.sig' --in '$DEB'"
check "packaging the same build again gives the same bytes (archive and .deb)" bash -c \
  "bash '$ROOT/scripts/release.sh' --out dist2 --build '$RB' --deb >/dev/null && cmp '$A' 'dist2/$NAME.tar.gz' &&
   cmp '$DEB' dist2/$(basename "$DEB")"

fi

if part repro; then
# From two checkouts of the commit in different directories, built separately: the
# same archive, byte for byte (SOURCE_DATE_EPOCH from the commit; nothing in the
# binary names the directory it was built in). When this tree is the clean commit (as
# in CI), it is the first checkout and its release above the first build; a tree with
# changes is compared through a second clean clone instead.
rm -rf ckA ckB-elsewhere && git clone -q --shared "$ROOT" "ckB-elsewhere"
if [[ -z $(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  FIRST=dist
else
  git clone -q --shared "$ROOT" ckA
  bash ckA/scripts/release.sh --out "$WORK/ckA-dist" --build "$WORK/ckA/build-release" --deb >/dev/null
  FIRST=ckA-dist
fi
check "two checkouts in different directories give the same archive and .deb, byte for byte" bash -c \
  "bash ckB-elsewhere/scripts/release.sh --out '$WORK/ckB-dist' --build '$WORK/ckB-elsewhere/b' --deb >/dev/null &&
   cmp $FIRST/*.tar.gz ckB-dist/*.tar.gz && cmp $FIRST/*.deb ckB-dist/*.deb &&
   cmp $FIRST/SHA256SUMS ckB-dist/SHA256SUMS"
rm -rf ckA ckB-elsewhere

fi

# unpack_archive: the archive unpacked into x/; X is its top directory.
unpack_archive() {
  rm -rf x && mkdir x && tar xzf "$A" -C x
  X=$WORK/x/$NAME
}
if part checks; then
# --- the README's verification lines ---------------------------------------------
# The fingerprint in the README is the committed release key's; the README's lines, as
# written (only the file names made the test's: its version, its .deb; the key in dist/
# is the test's), verify this release, and every one fails once the files are changed.
# cosign is not installable here: tests/support/cosign_check.py stands in for it, by a
# shim named cosign that passes its verify-blob arguments on.
check "the README's fingerprint is the committed key's: sha256 of its DER SubjectPublicKeyInfo" bash -c \
  "want=\$(openssl pkey -pubin -in '$ROOT/packaging/release/paddle-image.pub' -outform DER | sha256sum | cut -d' ' -f1) &&
   sed -n '/^## Verifying a release/,/^## /p' '$ROOT/README.md' | grep -qx \"    sha256:\$want\""
check "... the value verify-blob --json reports as the key (the test's key here)" bash -c \
  "[[ \$('$PI' verify-blob dist/SHA256SUMS --key dist/paddle-image.pub --signature dist/SHA256SUMS.sig --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)[\"key\"])') == sha256:\$(openssl pkey -pubin -in rel.pub -outform DER | sha256sum | cut -d' ' -f1) ]]"
rm -rf shim && mkdir shim && ln -s "$PI" shim/paddle-image
cat >shim/cosign <<EOF
#!/usr/bin/env bash
# cosign verify-blob --key K --signature S [--insecure-ignore-tlog=true] FILE, checked by cosign_check.py
[[ \$1 == verify-blob ]] || { echo "cosign shim: only verify-blob" >&2; exit 2; }
shift; args=(); file=
while [[ \$# -gt 0 ]]; do
  case \$1 in --key | --signature) args+=("\$1" "\$2"); shift 2 ;; --insecure-ignore-tlog=true) shift ;; *) file=\$1; shift ;; esac
done
exec python3 "$SUPPORT/cosign_check.py" verify-blob "\${args[@]}" --in "\$file"
EOF
chmod +x shim/cosign
sed -n '/^<!-- verify-release/,/^```$/p' "$ROOT/README.md" | sed '1,2d; $d' |
  sed -E "s/paddle-image-[0-9][^ ]*-linux-amd64\.tar\.gz/$NAME.tar.gz/g; s/paddle-image_[0-9][^ ]*_amd64\.deb/$(basename "$DEB")/g" >readme-verify.sh
check "the README's verification block has the openssl, cosign and paddle-image lines" bash -c \
  "grep -q '^openssl dgst -sha256 -verify paddle-image.pub' readme-verify.sh && grep -q '^cosign verify-blob .*--insecure-ignore-tlog=true' readme-verify.sh &&
   grep -q '^paddle-image verify-blob' readme-verify.sh && grep -q '^sha256sum -c' readme-verify.sh && [[ \$(grep -vc '^#' readme-verify.sh) -ge 6 ]]"
check "... and they verify this release, as written" bash -c \
  "cd dist && PATH='$WORK/shim':\$PATH bash -euo pipefail '$WORK/readme-verify.sh' >'$WORK/readme-verify.out' 2>&1 || { cat '$WORK/readme-verify.out'; exit 1; }"
rm -rf dist-tampered && cp -r dist dist-tampered
for f in "$NAME.tar.gz" "$(basename "$DEB")" SHA256SUMS; do printf x >>"dist-tampered/$f"; done
check "... and each of them fails on changed files" bash -c \
  "cd dist-tampered && n=0 && while IFS= read -r line; do
     [[ \$line == '#'* || \$line == 'openssl pkey'* ]] && continue
     n=\$((n + 1))
     if PATH='$WORK/shim':\$PATH bash -c \"\$line\" >/dev/null 2>&1; then echo \"passed on changed files: \$line\"; exit 1; fi
   done <'$WORK/readme-verify.sh' && [[ \$n -ge 5 ]]"
# --- SBOMs and provenance of the release files ------------------------------------------
# Each release file is a subject of the signed SLSA provenance (paddle-image.intoto.jsonl,
# one DSSE envelope), checked by paddle-image and by the independent verifier; the SBOMs
# are SPDX 2.3 with every bundled library, signed and in SHA256SUMS like the rest.
ATT=dist/paddle-image.intoto.jsonl
RELEASE_FILES=("$A" "$DEB" "$A.spdx.json" "$DEB.spdx.json")
check "SHA256SUMS lists both SBOMs, and each SBOM is signed" bash -c \
  "grep -q ' $NAME.tar.gz.spdx.json\$' dist/SHA256SUMS && grep -q ' $(basename "$DEB").spdx.json\$' dist/SHA256SUMS &&
   ${CC[*]} verify-blob --key rel.pub --signature '$A.spdx.json.sig' --in '$A.spdx.json' >/dev/null &&
   '$PI' verify-blob '$DEB.spdx.json' --key rel.pub --signature '$DEB.spdx.json.sig' >/dev/null"
check "the provenance is one DSSE envelope on one line (what cosign verify-blob-attestation --signature reads)" \
  bash -c "[[ \$(wc -l <'$ATT') -eq 1 ]] && python3 -c 'import json,sys; json.loads(open(sys.argv[1]).read())' '$ATT'"
for f in "${RELEASE_FILES[@]}"; do
  check "$(basename "$f"): its provenance verifies with paddle-image and with the independent verifier" bash -c \
    "'$PI' verify-blob-attestation '$f' --key rel.pub --signature '$ATT' --type slsaprovenance1 >/dev/null &&
     ${CC[*]} verify-blob-attestation --key rel.pub --signature '$ATT' --in '$f' --type slsaprovenance1 >/dev/null"
done
python3 -c 'import base64, json, sys; print(base64.b64decode(json.loads(open(sys.argv[1]).read())["payload"]).decode())' \
  "$ATT" >statement.json
python3 -c 'import json; json.dump(json.load(open("statement.json"))["predicate"], open("provenance.json", "w"))'
check "the provenance is an in-toto Statement v1 with a SLSA v1 predicate (required fields)" bash -c \
  "${CC[*]} schema --kind intoto statement.json >/dev/null && ${CC[*]} schema --kind slsa provenance.json >/dev/null"
check "... naming every release file, the repository, the commit, the command, the tools and the bundled packages" \
  python3 - "$ROOT" "${RELEASE_FILES[@]}" <<'PY'
import hashlib, json, os, subprocess, sys
st = json.load(open("statement.json"))
root, files = sys.argv[1], sys.argv[2:]
subjects = {s["name"]: s["digest"]["sha256"] for s in st["subject"]}
for f in files:
    assert subjects.get(os.path.basename(f)) == hashlib.sha256(open(f, "rb").read()).hexdigest(), f
p = st["predicate"]
bd, rd = p["buildDefinition"], p["runDetails"]
head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
assert bd["externalParameters"]["source"]["commit"] == head, (bd["externalParameters"], head)
assert bd["externalParameters"]["source"]["repository"].startswith("https://"), bd
assert bd["externalParameters"]["command"][0] == "scripts/release.sh", bd
src = [d for d in bd["resolvedDependencies"] if d.get("digest", {}).get("gitCommit")]
assert src and src[0]["digest"]["gitCommit"] == head and src[0]["uri"].startswith("git+https://"), src
debs = {d["name"] for d in bd["resolvedDependencies"] if d.get("uri", "").startswith("pkg:deb/debian/")}
assert {"libcurl4", "libssl3", "libarchive13"} <= debs, debs
for tool in ("cmake", "ninja", "gcc", "g++", "dpkg", "os", "paddle-image"):
    assert rd["builder"]["version"].get(tool), (tool, rd["builder"])
epoch = subprocess.run(["git", "-C", root, "log", "-1", "--format=%ct"], capture_output=True, text=True).stdout.strip()
assert bd["externalParameters"]["source_date_epoch"] == int(epoch), bd
assert rd["metadata"]["startedOn"] == rd["metadata"]["finishedOn"], rd
PY
cp "$A" tampered.tar.gz && printf 'x' >>tampered.tar.gz
expect_fail "a changed archive is no subject of the provenance (exit 11, naming the file)" 11 \
  "tampered.tar.gz \(sha256:[0-9a-f]+\) is not a subject of" \
  "$PI" verify-blob-attestation tampered.tar.gz --key rel.pub --signature "$ATT" --type slsaprovenance1
check "... and the independent verifier refuses it too" bash -c \
  "! ${CC[*]} verify-blob-attestation --key rel.pub --signature '$ATT' --in tampered.tar.gz 2>/dev/null"
rm -f other.key other.pub && "$PI" key generate -o other >/dev/null 2>&1
expect_fail "another key's public key: exit 11" 11 "no signature in .* verifies with other.pub" \
  "$PI" verify-blob-attestation "$A" --key other.pub --signature "$ATT"
expect_fail "an SBOM is not what the provenance attests as spdxjson (exit 11)" 11 "not https://spdx.dev/Document" \
  "$PI" verify-blob-attestation "$A" --key rel.pub --signature "$ATT" --type spdxjson
check "the SBOMs are SPDX 2.3 (the spec's required fields; SPDXIDs and relationships consistent)" bash -c \
  "${CC[*]} schema --kind spdx '$A.spdx.json' >/dev/null && ${CC[*]} schema --kind spdx '$DEB.spdx.json' >/dev/null"
rm -rf sbx && mkdir sbx && tar xzf "$A" -C sbx
check "the archive's SBOM lists every bundled library: its Debian package, version, purl, license and SHA-256 as in lib/" \
  python3 - "$A" "sbx/$NAME" "$V" <<'PY'
import hashlib, json, os, subprocess, sys
archive, x, version = sys.argv[1:]
doc = json.load(open(archive + ".spdx.json"))
pkgs = {p["SPDXID"]: p for p in doc["packages"]}
files = {f["SPDXID"]: f for f in doc["files"]}
contains = [(r["spdxElementId"], r["relatedSpdxElement"]) for r in doc["relationships"] if r["relationshipType"] == "CONTAINS"]
main = pkgs[next(r["relatedSpdxElement"] for r in doc["relationships"] if r["relationshipType"] == "DESCRIBES")]
assert main["name"] == "paddle-image" and main["versionInfo"] == version, main
assert main["checksums"][0]["checksumValue"] == hashlib.sha256(open(archive, "rb").read()).hexdigest(), main
assert main["downloadLocation"].startswith("git+https://") and "@" in main["downloadLocation"], main
info = {}
for line in open(x + "/share/doc/paddle-image/BUILD-INFO"):
    w = line.split()
    if len(w) == 3 and ".so" in w[0]:
        info[w[0]] = (w[1], w[2])
libs = sorted(os.listdir(x + "/lib"))
assert len(libs) > 10 and set(libs) == set(info), (libs, info)
for soname in libs:
    sha = hashlib.sha256(open(x + "/lib/" + soname, "rb").read()).hexdigest()
    fid = [i for i, f in files.items() if f["fileName"] == "./lib/" + soname]
    assert len(fid) == 1, soname
    assert {"algorithm": "SHA256", "checksumValue": sha} in files[fid[0]]["checksums"], soname
    owners = [pkgs[a] for a, b in contains if b == fid[0] and a in pkgs]
    assert len(owners) == 1, (soname, owners)
    p = owners[0]
    pkg, ver = info[soname]
    assert (p["name"], p["versionInfo"]) == (pkg, ver), (soname, p["name"], p["versionInfo"], pkg, ver)
    purls = [r["referenceLocator"] for r in p["externalRefs"] if r["referenceType"] == "purl"]
    assert purls and purls[0].startswith("pkg:deb/debian/") and purls[0].endswith("distro=debian-12"), purls
    assert p["licenseDeclared"], p
    assert (main["SPDXID"], p["SPDXID"]) in contains, p["name"]
curl = [p for p in doc["packages"] if p["name"] == "libcurl4"]
assert curl and curl[0]["licenseDeclared"] == "curl", curl
PY
check "the .deb's SBOM lists each of its Depends (DEPENDS_ON) at the version installed where it was made" \
  python3 - "$DEB" <<'PY'
import json, re, subprocess, sys
deb = sys.argv[1]
doc = json.load(open(deb + ".spdx.json"))
pkgs = {p["SPDXID"]: p for p in doc["packages"]}
main = pkgs[next(r["relatedSpdxElement"] for r in doc["relationships"] if r["relationshipType"] == "DESCRIBES")]
deps = {pkgs[r["relatedSpdxElement"]]["name"]: pkgs[r["relatedSpdxElement"]] for r in doc["relationships"]
        if r["relationshipType"] == "DEPENDS_ON" and r["spdxElementId"] == main["SPDXID"]}
depends = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True, check=True).stdout
names = [re.match(r"\s*([a-z0-9][a-z0-9+.-]*)", c.split("|")[0]).group(1) for c in depends.split(",")]
assert names and set(names) == set(deps), (names, sorted(deps))
for n in names:
    have = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", n], capture_output=True, text=True).stdout
    assert deps[n]["versionInfo"] == have, (n, deps[n]["versionInfo"], have)
    assert any(r["referenceLocator"].startswith("pkg:deb/debian/" + n.replace("+", "%2B") + "@")
               for r in deps[n]["externalRefs"]), deps[n]
assert main["versionInfo"] == subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True,
                                             text=True).stdout.strip()
PY
check "packaging again gives the same SBOMs, byte for byte; without --key, no provenance" bash -c \
  "cmp '$A.spdx.json' 'dist2/$NAME.tar.gz.spdx.json' && cmp '$DEB.spdx.json' 'dist2/$(basename "$DEB").spdx.json' &&
   ! test -e dist2/paddle-image.intoto.jsonl"
rm -rf sbx

# --- the Debian package -------------------------------------------------------------
check "lintian --pedantic says nothing of the .deb (it fails on any warning or pedantic tag)" bash -c \
  "out=\$(lintian --pedantic --fail-on error,warning,pedantic '$DEB') && [[ -z \$out ]] || { echo \"\$out\"; exit 1; }"
check "... its one override is initial-upload-closes-no-bugs (the .deb is not uploaded to Debian: no ITP bug), explained" bash -c \
  "[[ \$(dpkg-deb -c '$DEB' | grep -c usr/share/lintian/overrides/.) -eq 1 ]] &&
   [[ \$(lintian --pedantic --no-override '$DEB' | sed 's/ \\[.*//') == 'W: paddle-image: initial-upload-closes-no-bugs' ]] &&
   dpkg-deb --fsys-tarfile '$DEB' | tar xO ./usr/share/lintian/overrides/paddle-image | grep -q '^# .*not uploaded to Debian'"
check "it recommends ca-certificates, and apt and gpgv (lock of a debs layer runs them)" bash -c \
  "[[ \$(dpkg-deb -f '$DEB' Recommends) == 'ca-certificates, apt, gpgv' ]]"
dpkg-deb -f "$DEB" Depends >deb-depends.txt
rm -rf debx && mkdir debx && dpkg-deb -x "$DEB" debx
mkdir -p shl/debian/paddle-image/usr/bin && cp debx/usr/bin/paddle-image shl/debian/paddle-image/usr/bin/ &&
  cp "$ROOT/packaging/deb/control" shl/debian/control
check "its Depends is what dpkg-shlibdeps computes from the binary (libcurl4, libarchive13 among them)" bash -c \
  "cd shl && [[ \"\$(dpkg-shlibdeps -O -e debian/paddle-image/usr/bin/paddle-image 2>/dev/null | sed -n 's/^shlibs:Depends=//p')\" == \"\$(cat ../deb-depends.txt)\" ]] &&
   grep -q 'libcurl4 (' ../deb-depends.txt && grep -q 'libarchive13 (' ../deb-depends.txt"
check "its binary has no RPATH and is stripped" bash -c \
  "! readelf -d debx/usr/bin/paddle-image | grep -qE 'RPATH|RUNPATH' && ! readelf -S debx/usr/bin/paddle-image | grep -q '\\.symtab'"
check "man pages gzip -9n (no name, no time), one per command" python3 -c "
import glob, struct, sys
pages = glob.glob('debx/usr/share/man/man1/*.1.gz')
assert len(pages) > 30, len(pages)
for p in pages:
    h = open(p, 'rb').read(10)
    assert h[:2] == b'\\x1f\\x8b' and h[3] & 0x08 == 0 and struct.unpack('<I', h[4:8])[0] == 0 and h[8] == 2, (p, h)
"
check "copyright (DEP-5, from COPYRIGHT) and changelog.Debian.gz naming the version and a Maintainer with an address" bash -c \
  "grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' debx/usr/share/doc/paddle-image/copyright &&
   grep -qF \"\$(sed -n 3p '$ROOT/COPYRIGHT')\" debx/usr/share/doc/paddle-image/copyright &&
   zcat debx/usr/share/doc/paddle-image/changelog.Debian.gz | head -1 | grep -qF 'paddle-image (${V}-1)' &&
   zcat debx/usr/share/doc/paddle-image/changelog.Debian.gz | grep -qF \"git revision \$(debx/usr/bin/paddle-image version --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"git\"][\"revision\"])')\" &&
   dpkg-deb -f '$DEB' Maintainer | grep -qE '<[^@ ]+@[^@ ]+>'"

unpack_archive
check "the binary finds its libraries through \$ORIGIN/../lib (DT_RPATH, no empty entry)" bash -c \
  "readelf -d '$X/libexec/paddle-image' | grep -F '(RPATH)' | grep -qF '[\$ORIGIN/../lib]'"
check "every library it carries has its copyright file" bash -c \
  "[[ \$(ls '$X/share/doc/paddle-image/licenses' | wc -l) -gt 10 ]] && grep -q 'libcurl.so.4 libcurl4' '$X/share/doc/paddle-image/BUILD-INFO'"
need=$(objdump -T "$X/libexec/paddle-image" "$X"/lib/* 2>/dev/null | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' |
  sed 's/GLIBC_//' | sort -uV | tail -1)
check "the glibc it needs ($need) is stated, as computed from the symbols" \
  grep -q "glibc $need or later" "$X/share/doc/paddle-image/BUILD-INFO"
check "man pages, completions and install.sh are inside" bash -c \
  "test -f '$X/share/man/man1/paddle-image-build.1' && test -f '$X/share/bash-completion/completions/paddle-image' && test -x '$X/install.sh'"

# An older glibc, and a C library that is not glibc: a fake getconf first in PATH.
mkdir -p oldglibc noglibc
printf '#!/bin/sh\necho "glibc 2.17"\n' >oldglibc/getconf
printf '#!/bin/sh\nexit 1\n' >noglibc/getconf
chmod +x oldglibc/getconf noglibc/getconf
expect_fail "on glibc 2.17 it says which glibc it needs (exit 126)" 126 "needs glibc $need or later; this system has glibc 2.17" \
  env PATH="$WORK/oldglibc:$PATH" "$X/bin/paddle-image" --version
expect_fail "on another C library it says so (exit 126)" 126 "not glibc" \
  env PATH="$WORK/noglibc:$PATH" "$X/bin/paddle-image" --version
ln -sf "$X/bin/paddle-image" linked-paddle-image
check "it runs through a symlink in PATH" bash -c "'$WORK/linked-paddle-image' version | grep -q '^paddle-image '"

fi

# host_build: the bundled example built here with the test's binary, its digest in
# host-built.txt (what the archive, the .deb and the image must give too).
host_build() {
  rm -rf host-example && cp -r "$ROOT/examples/ocr-train" host-example && rm -rf host-example/out
  (cd host-example && "$PI" build spec.yaml --output oci:out/ocr-train --revision release-test -q >"$WORK/host-built.txt")
}
if part chroot; then
# A minimal Debian 12 without the libraries: the suite's debootstrap rootfs (no -dev
# package, no libcurl, libarchive, yaml-cpp, sodium, toml++: checked) through an overlay,
# with the OpenSSL and libstdc++ it has removed as well.
ROOTFS=$FIXTURES/base/rootfs
if [[ ! -d $ROOTFS ]]; then
  fail "the debootstrap rootfs $ROOTFS is missing (scripts/test.sh makes it)"
  finish
fi
# chroot_preamble DIR: the start of a script (run under unshare -m) that mounts an
# overlay of the rootfs at $WORK/DIR/root as $R, with the bundled example at
# /srv/example, /proc and /dev.
chroot_preamble() {
  rm -rf "$1" && mkdir -p "$1/upper" "$1/work" "$1/root"
  cat <<EOF
set -e
mount -t overlay overlay -o lowerdir=$ROOTFS,upperdir=$WORK/$1/upper,workdir=$WORK/$1/work $WORK/$1/root
R=$WORK/$1/root
mkdir -p \$R/srv
cp -r $ROOT/examples/ocr-train \$R/srv/example && rm -rf \$R/srv/example/out
mount -t proc proc \$R/proc
mount --bind /dev \$R/dev
EOF
}
{ chroot_preamble ovl; cat <<EOF; } >inside.sh
rm -f \$R/usr/lib/x86_64-linux-gnu/libssl.so* \$R/usr/lib/x86_64-linux-gnu/libcrypto.so* \$R/usr/lib/x86_64-linux-gnu/libstdc++.so*
for lib in libcurl.so.4 libarchive.so.13 libyaml-cpp.so.0.7 libsodium.so.23 libtomlplusplus.so.3; do
  ! ls \$R/usr/lib/x86_64-linux-gnu/\$lib* >/dev/null 2>&1 || { echo "the minimal rootfs has \$lib"; exit 1; }
done
mkdir -p \$R/opt && tar xzf $WORK/$A -C \$R/opt
echo "== libraries"
chroot \$R ldd /opt/$NAME/libexec/paddle-image
echo "== version"
chroot \$R /opt/$NAME/bin/paddle-image --version
echo "== build"
chroot \$R sh -c 'cd /srv/example && /opt/$NAME/bin/paddle-image build spec.yaml --output oci:out/ocr-train --revision release-test -q' >$WORK/chroot-built.txt
chroot \$R sh -c 'cd /srv/example && /opt/$NAME/bin/paddle-image inspect oci:out/ocr-train:v1 --json' >$WORK/chroot-inspect.json
echo "== install.sh"
chroot \$R /opt/$NAME/install.sh --prefix /opt/pi >/dev/null
chroot \$R /opt/pi/bin/paddle-image version
chroot \$R /opt/pi/lib/paddle-image/uninstall.sh >/dev/null
test ! -e \$R/opt/pi
echo "== install.sh done"
EOF
check "in a minimal Debian 12 without its libraries, the archive runs and builds the bundled example" \
  bash -c "unshare -m bash '$WORK/inside.sh' >'$WORK/chroot.log' 2>&1"
check "... every library resolved from the archive or glibc" bash -c \
  "awk '/== libraries/{on=1;next} /== version/{on=0} on && /=>/' '$WORK/chroot.log' >libs.txt && [[ -s libs.txt ]] &&
   ! grep -vE '=> /opt/$NAME/(libexec/\\.\\./)?lib/|lib(c|m|dl|pthread|rt|resolv)\\.so|ld-linux' libs.txt && ! grep -q 'not found' libs.txt"
check "... said its version" grep -q "^paddle-image " "$WORK/chroot.log"
check "... install.sh --prefix put it where it runs, and its uninstall.sh took the prefix away" bash -c \
  "awk '/== install.sh\$/{on=1;next} on' '$WORK/chroot.log' | grep -q '^paddle-image ' && grep -q '^== install.sh done' '$WORK/chroot.log'"
check "... and the example image has its layers" python3 -c \
  "import json; j = json.load(open('$WORK/chroot-inspect.json')); assert len(j['manifest']['layers']) >= 3, j"
# (--revision: the copy here may sit inside a git checkout, which would be the default)
host_build || true
check "... the same digest as the test build makes of it here" bash -c \
  "[[ -s '$WORK/host-built.txt' && -s '$WORK/chroot-built.txt' ]] && [[ \$(grep -o 'sha256:[0-9a-f]*' '$WORK/host-built.txt') == \$(grep -o 'sha256:[0-9a-f]*' '$WORK/chroot-built.txt') ]]"
# --- the .deb on a minimal Debian 12 ----------------------------------------------------
# A copy (overlay) of the suite's debootstrap rootfs, which has no -dev package; apt's
# only source is a local repository of the packages the .deb and man-db need
# (tests/support/fetch-debs.sh, a fixture), and there is no network: unshare -n.
DEBS=$FIXTURES/debs
if [[ -f $DEBS/Packages ]]; then
  { chroot_preamble dovl; cat <<EOF; } >deb-inside.sh
! ls \$R/usr/include/curl/curl.h \$R/usr/include/archive.h >/dev/null 2>&1 || { echo "the minimal rootfs has -dev headers"; exit 1; }
mkdir -p \$R/srv/debs \$R/srv/pkg
cp $DEBS/*.deb $DEBS/Packages \$R/srv/debs/
cp $WORK/$DEB \$R/srv/pkg/
echo 'deb [trusted=yes] file:/srv/debs ./' >\$R/etc/apt/sources.list
rm -f \$R/etc/apt/sources.list.d/*
A="-o APT::Sandbox::User=root -o Acquire::Languages=none -q"
echo "== apt-get install"
chroot \$R sh -c "apt-get \$A update && cd /srv/pkg && DEBIAN_FRONTEND=noninteractive apt-get \$A install -y --no-install-recommends ./$(basename "$DEB") man-db"
echo "== status"
chroot \$R dpkg-query -W -f '\${Status} \${Version}\n' paddle-image
echo "== libraries"
chroot \$R ldd /usr/bin/paddle-image
echo "== version"
chroot \$R paddle-image --version
echo "== man"
chroot \$R sh -c 'LC_ALL=C.UTF-8 MANWIDTH=200 man -P cat paddle-image-build' >$WORK/deb-man.txt
echo "== completion"
chroot \$R bash -c 'source /usr/share/bash-completion/completions/paddle-image; COMP_WORDS=(paddle-image bu); COMP_CWORD=1; _paddle_image; echo "\${COMPREPLY[*]}"'
echo "== build"
chroot \$R sh -c 'cd /srv/example && paddle-image build spec.yaml --output oci:out/ocr-train --revision release-test -q' >$WORK/deb-built.txt
echo "== remove"
chroot \$R sh -c "apt-get \$A remove -y paddle-image >/dev/null && ! test -e /usr/bin/paddle-image && ! test -e /usr/share/man/man1/paddle-image-build.1.gz"
echo "== removed"
# The archive's install.sh, now that man-db is there and the .deb gone: /usr/local, then a prefix.
tar xzf $WORK/$A -C \$R/srv
P="env PATH=/usr/local/bin:/usr/bin:/bin"
chroot \$R find /usr/local | LC_ALL=C sort >$WORK/usrlocal-before.txt
chroot \$R \$P /srv/$NAME/install.sh >$WORK/install-out.txt
chroot \$R \$P sh -c 'command -v paddle-image && paddle-image --version' >$WORK/install-run.txt
chroot \$R \$P man -w paddle-image-build >$WORK/install-man.txt
chroot \$R \$P bash -c 'source /usr/local/share/bash-completion/completions/paddle-image; COMP_WORDS=(paddle-image bu); COMP_CWORD=1; _paddle_image; echo "\${COMPREPLY[*]}"' >$WORK/install-completion.txt
test -f \$R/usr/local/share/zsh/site-functions/_paddle-image && test -f \$R/usr/local/share/fish/vendor_completions.d/paddle-image.fish
chroot \$R \$P /usr/local/lib/paddle-image/uninstall.sh
chroot \$R find /usr/local | LC_ALL=C sort >$WORK/usrlocal-after.txt
chroot \$R \$P /srv/$NAME/install.sh --prefix /opt/pi >/dev/null
chroot \$R env PATH=/opt/pi/bin:/usr/bin:/bin man -w paddle-image-build >$WORK/install-man-prefix.txt
chroot \$R \$P /srv/$NAME/install.sh --uninstall --prefix /opt/pi
test ! -e \$R/opt/pi
echo "== archive installed and removed"
EOF
  check "apt-get install ./paddle-image_*.deb on a minimal Debian 12 (no -dev packages, no network) installs it and its Depends" \
    bash -c "unshare -m -n bash '$WORK/deb-inside.sh' >'$WORK/deb-chroot.log' 2>&1 || { tail -15 '$WORK/deb-chroot.log'; exit 1; }"
  check "... dpkg has it installed, at its version" grep -q "^install ok installed ${V}-1\$" deb-chroot.log
  check "... every library resolves from the system" bash -c \
    "awk '/== libraries/{on=1;next} /== version/{on=0} on' deb-chroot.log >deb-libs.txt && grep -q 'libcurl.so.4 => /' deb-libs.txt && ! grep -q 'not found' deb-libs.txt"
  check "... --version works" grep -q "^paddle-image $V " deb-chroot.log
  check "... man paddle-image-build shows the page" grep -q -- "--cache-dir" deb-man.txt
  check "... bash completes with the installed completion" bash -c "awk '/== completion/{getline; print; exit}' deb-chroot.log | grep -qx build"
  check "... it builds the bundled example, to the same digest as here" bash -c \
    "[[ -s deb-built.txt ]] && [[ \$(grep -o 'sha256:[0-9a-f]*' deb-built.txt) == \$(grep -o 'sha256:[0-9a-f]*' host-built.txt) ]]"
  check "... and apt-get remove takes its files away" grep -q "^== removed" deb-chroot.log
  check "the archive's install.sh (default prefix /usr/local): paddle-image in PATH runs" bash -c \
    "grep -qx /usr/local/bin/paddle-image install-run.txt && grep -q '^paddle-image $V ' install-run.txt"
  check "... man -w paddle-image-build finds its page (Debian's /usr/local/man is a link to share/man)" \
    grep -qxE '/usr/local/(share/)?man/man1/paddle-image-build.1' install-man.txt
  check "... bash completes with the installed completion" grep -qx build install-completion.txt
  check "... its uninstall.sh leaves /usr/local as it was, file for file" bash -c \
    "[[ -s usrlocal-before.txt ]] && diff usrlocal-before.txt usrlocal-after.txt"
  check "... with --prefix /opt/pi, man finds the page through PATH, and --uninstall removes the prefix" bash -c \
    "grep -qx /opt/pi/share/man/man1/paddle-image-build.1 install-man-prefix.txt && grep -q '^== archive installed and removed' deb-chroot.log"
else
  fail "the local apt repository $DEBS is missing (scripts/test.sh fetches it: tests/support/fetch-debs.sh)"
fi

fi

if part image; then
part checks || unpack_archive
part chroot || host_build
# --- paddle-image's own image -------------------------------------------------------
debian_base_spec "$WORK/debbase.yaml"
"$PI" build "$WORK/debbase.yaml" -q -o "oci:$WORK/debbase:v1" >/dev/null
expect_fail "release.sh --image with a base that is not there: refused, naming it, before anything is written" 3 \
  "cannot read the base image oci:$WORK/nobase:v1" \
  bash "$ROOT/scripts/release.sh" --out dist-nobase --build "$RB" --no-deb --image --image-base "oci:$WORK/nobase:v1"
expect_fail "... and with a registry base that cannot be reached (exit 6, the network's)" 6 \
  "cannot read the base image 127.0.0.1:9/none/debian:12" \
  bash "$ROOT/scripts/release.sh" --out dist-nobase --build "$RB" --no-deb --image --image-base "127.0.0.1:9/none/debian:12"
check "... dist-nobase was not made" test ! -e dist-nobase
IMGNAME=example.org/release-test/paddle-image
check "release.sh --image builds paddle-image's own image on the stand-in base, signed, named by --image-name" \
  bash "$ROOT/scripts/release.sh" --out dist3 --build "$RB" --no-deb --image --image-base "oci:$WORK/debbase:v1" \
  --key rel.key --pub rel.pub --image-name "$IMGNAME"
check "... with --no-deb, no .deb; SHA256SUMS lists the archive, its SBOM and image.digest, and checks" bash -c \
  "! ls dist3/*.deb 2>/dev/null && ! grep -q '\.deb' dist3/SHA256SUMS && grep -q ' $NAME.tar.gz\$' dist3/SHA256SUMS &&
   grep -q ' $NAME.tar.gz.spdx.json\$' dist3/SHA256SUMS && grep -q ' image.digest\$' dist3/SHA256SUMS &&
   [[ \$(wc -l <dist3/SHA256SUMS) -eq 3 ]] && (cd dist3 && sha256sum -c --quiet SHA256SUMS)"
check "... again from the same archive, named by PADDLE_IMAGE_RELEASE_IMAGE: the same digest" bash -c \
  "PADDLE_IMAGE_RELEASE_IMAGE='$IMGNAME' bash '$ROOT/scripts/release.sh' --out dist4 --build '$RB' --image --image-base 'oci:$WORK/debbase:v1' >/dev/null &&
   [[ -s dist3/image.digest ]] && cmp dist3/image.digest dist4/image.digest"
check "its signature, provenance and SBOM verify, for the name given" "$PI" verify "oci:dist3/image:$V" --key rel.pub --identity "$IMGNAME:$V" --attestations slsa,spdx
check "its layout keeps no .paddle-image.lock and no .tmp/" bash -c \
  "[[ \$(ls -A dist3/image | LC_ALL=C sort | tr '\n' ' ') == 'blobs index.json oci-layout ' ]]"
check "it runs as 65532:65532 with HOME=/home/nonroot, by default" bash -c \
  "'$PI' inspect 'oci:dist3/image:$V' --json | python3 -c \"import json,sys; c=json.load(sys.stdin)['config']['config']; assert c['User'] == '65532:65532' and 'HOME=/home/nonroot' in c['Env'], c\""
check "its SBOM lists the Debian base's packages" bash -c \
  "'$PI' sbom 'oci:dist3/image:$V' -q >sbom.json && grep -q '\"name\": \"libc6\"' sbom.json"
check "... and the archive's bundled libraries, at their bundled versions (from /var/lib/db/sbom)" \
  python3 - "$X/share/doc/paddle-image/BUILD-INFO" <<'PY'
import json, sys
doc = json.load(open("sbom.json"))
bundled = {}
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) == 3 and ".so" in w[0]:
        bundled[w[1]] = w[2]
listed = {}
for p in doc["packages"]:
    if "var/lib/db/sbom/" in p.get("comment", ""):
        listed[p["name"]] = (p.get("versionInfo"), [r["referenceLocator"] for r in p.get("externalRefs", [])])
assert {"libcurl4", "libssl3", "libarchive13"} <= set(bundled), bundled
for pkg, version in bundled.items():
    assert pkg in listed and listed[pkg][0] == version, (pkg, version, listed.get(pkg))
    assert listed[pkg][1] and listed[pkg][1][0].startswith("pkg:deb/debian/" + pkg.replace("+", "%2B") + "@"), listed[pkg]
assert "paddle-image" in listed, sorted(listed)
PY
check "its provenance names the source repository and the commit" python3 - dist3/image "$ROOT" <<'PY'
import base64, json, subprocess, sys
layout, root = sys.argv[1:]
head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
digest = open(layout + "/../image.digest").read().strip()
blob = lambda d: open("%s/blobs/%s" % (layout, d.replace(":", "/")), "rb").read()
idx = json.loads(blob(next(m["digest"] for m in json.load(open(layout + "/index.json"))["manifests"]
                          if m.get("annotations", {}).get("org.opencontainers.image.ref.name") ==
                          digest.replace(":", "-") + ".att")))
found = False
for layer in idx["layers"]:
    st = json.loads(base64.b64decode(json.loads(blob(layer["digest"]))["payload"]))
    if st["predicateType"] == "https://slsa.dev/provenance/v1":
        for d in st["predicate"]["buildDefinition"]["resolvedDependencies"]:
            if d.get("digest", {}).get("gitCommit") == head and d.get("uri", "").startswith("git+https://"):
                found = True
assert found, "no source dependency with commit " + head
PY
check "paddle-image is its entrypoint" bash -c \
  "'$PI' inspect 'oci:dist3/image:$V' --json | python3 -c \"import json,sys; c=json.load(sys.stdin)['config']['config']; assert c['Entrypoint'] == ['/opt/paddle-image/bin/paddle-image'], c\""
rm -rf imgbundle
umoci unpack --image "dist3/image:$V" imgbundle >/dev/null 2>&1
out=$(run_in_bundle imgbundle /opt/paddle-image/bin/paddle-image --version 2>&1) || true
check "runc runs it and it prints its version" grep -q "^paddle-image $V " <<<"$out"
check "... as uid 65532, not root, with its home writable by any uid (1777)" bash -c \
  "source '$SUPPORT/container.sh'; [[ \$(run_in_bundle imgbundle /usr/bin/id -u) == 65532 ]] &&
   [[ \$(stat -c '%a %u' imgbundle/rootfs/home/nonroot) == '1777 65532' ]]"
if podman_isolated pull -q "oci:$WORK/dist3/image:$V" >podman-pull.txt 2>&1; then
  IMG=$(head -1 podman-pull.txt)
  check "podman runs it and it prints its version" bash -c "source '$SUPPORT/container.sh'; export PODMAN_TMP='$PODMAN_TMP';
    podman_run '$IMG' --version | grep -q '^paddle-image $V '"
  check "podman runs it as uid 65532 by default" bash -c "source '$SUPPORT/container.sh'; export PODMAN_TMP='$PODMAN_TMP';
    [[ \$(podman_run --entrypoint /usr/bin/id '$IMG' -u) == 65532 ]]"
  # A user's directory (uid 1234) mounted at /work, the image run as that user (-u).
  rm -rf podman-example && cp -r "$ROOT/examples/ocr-train" podman-example && rm -rf podman-example/out &&
    chown -R 1234:1234 podman-example
  check "in podman, -u 1234:1234, it builds the bundled example from a mounted directory, to the same digest" bash -c \
    "source '$SUPPORT/container.sh'; export PODMAN_TMP='$PODMAN_TMP';
     podman_run -u 1234:1234 -v '$WORK/podman-example:/work' '$IMG' build spec.yaml --output oci:out/ocr-train --revision release-test -q >podman-built.txt &&
     [[ \$(grep -o 'sha256:[0-9a-f]*' podman-built.txt) == \$(grep -o 'sha256:[0-9a-f]*' '$WORK/host-built.txt') ]]"
  check "... and every file it wrote there is uid 1234's" bash -c \
    "[[ -d podman-example/out/ocr-train ]] && [[ -z \$(find podman-example ! -uid 1234) ]]"
else
  fail "podman pulls the image from its OCI layout: $(tail -3 podman-pull.txt)"
fi
fi
finish
