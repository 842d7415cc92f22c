#!/usr/bin/env bash
# dpkg's rules in a debs layer, end to end on the Debian rootfs fixture (merged /usr):
# packages built here with dpkg-deb, in an apt repository signed here. Four that dpkg
# would refuse or handle otherwise are refused with the package, path or field named:
# a base directory replaced by a symlink, a base package's file taken over without
# Replaces, a write into dpkg's database, a forged Conffiles field. Their legitimate
# twins (a Replaces takeover, a directory that stays one, ./bin/x on a merged /usr, a
# library in an ld.so.conf.d directory with a bare `ldconfig` postinst and the ldconfig
# trigger, a conffile) build into an image that runc runs: dpkg -V, dpkg -S and apt-get
# check agree with the tree, the loader finds the library through the cache the layer
# wrote, and everything dpkg recorded matches `apt-get install` of the same packages in
# a chroot of the same rootfs (file lists, status fields, ldconfig's cache, the tree).
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
cd "$WORK"

debian_base_spec base.yaml
check "base image builds from the rootfs" "$PI" build base.yaml -q -o oci:base:bookworm

# --- the packages -----------------------------------------------------------------
pkg() { # NAME [CONTROL-LINES]: a package tree src/NAME with its control file
  mkdir -p "src/$1/DEBIAN"
  printf 'Package: %s\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@test.invalid>\n%sDescription: test\n' \
    "$1" "${2:-}" >"src/$1/DEBIAN/control"
}
pkg pi-evil-link
mkdir -p src/pi-evil-link/usr && ln -s /tmp src/pi-evil-link/usr/share
pkg pi-evil-which
# debianutils' /bin/run-parts, shipped through the merged /usr as /usr/bin/run-parts.
mkdir -p src/pi-evil-which/usr/bin && printf '#!/bin/sh\necho pwned\n' >src/pi-evil-which/usr/bin/run-parts
pkg pi-evil-db
mkdir -p src/pi-evil-db/var/lib/dpkg/info && echo /pwned >src/pi-evil-db/var/lib/dpkg/info/libc6.list
echo "Package: pwned" >src/pi-evil-db/var/lib/dpkg/status
pkg pi-evil-conffiles "Conffiles:
 /etc/passwd 00000000000000000000000000000000
"
mkdir -p src/pi-evil-conffiles/usr/share/pi-evil && echo x >src/pi-evil-conffiles/usr/share/pi-evil/x
# The legitimate twins.
pkg pi-which "Replaces: debianutils (<< 6)
"
mkdir -p src/pi-which/bin && printf '#!/bin/sh\necho pi-run-parts "$@"\n' >src/pi-which/bin/run-parts
chmod 755 src/pi-which/bin/run-parts
pkg pi-doc
mkdir -p src/pi-doc/usr/share/pi-doc && echo "stays a directory" >src/pi-doc/usr/share/pi-doc/README
pkg pi-hello
mkdir -p src/pi-hello/bin && printf '#!/bin/sh\necho hello from /bin\n' >src/pi-hello/bin/pi-hello
chmod 755 src/pi-hello/bin/pi-hello
pkg pi-vendor
mkdir -p src/pi-vendor/opt/pivendor/lib src/pi-vendor/etc/ld.so.conf.d
printf 'int pi_vendor_answer(void) { return 42; }\n' >vendor.c
gcc -shared -fPIC -Wl,-soname,libpivendor.so.1 -o src/pi-vendor/opt/pivendor/lib/libpivendor.so.1.0 vendor.c
echo /opt/pivendor/lib >src/pi-vendor/etc/ld.so.conf.d/pivendor.conf
echo "answer=42" >src/pi-vendor/etc/pivendor.conf
echo /etc/pivendor.conf >src/pi-vendor/DEBIAN/conffiles
printf '#!/bin/sh\nset -e\n# the libraries moved\nldconfig\n' >src/pi-vendor/DEBIAN/postinst
chmod 755 src/pi-vendor/DEBIAN/postinst
echo "activate-noawait ldconfig" >src/pi-vendor/DEBIAN/triggers
mkdir -p repo/pool/main repo/dists/bookworm/main/binary-amd64
for d in src/*; do
  dpkg-deb --root-owner-group --nocheck -Zgzip --build "$d" "repo/pool/main/$(basename "$d")_1.0_amd64.deb" >/dev/null 2>>dpkg-deb.log
done
(cd repo && dpkg-scanpackages pool /dev/null >dists/bookworm/main/binary-amd64/Packages 2>/dev/null)
(cd repo/dists/bookworm && apt-ftparchive -o APT::FTPArchive::Release::Suite=bookworm \
  -o APT::FTPArchive::Release::Architectures=amd64 -o APT::FTPArchive::Release::Components=main release . >Release)
export GNUPGHOME=$WORK/gnupg
mkdir -m 700 "$GNUPGHOME"
trap 'gpgconf --kill gpg-agent 2>/dev/null || true' EXIT
gpg --batch --quiet --passphrase '' --quick-gen-key "dpkg rules test <t@test.invalid>" ed25519 sign never
gpg --batch --quiet --export t@test.invalid >keyring.gpg
gpg --batch --quiet --clearsign -o repo/dists/bookworm/InRelease repo/dists/bookworm/Release

spec() { # FILE PACKAGES
  cat >"$1" <<YAML
base: oci:base:bookworm
source_date_epoch: 1700000000
compression: {format: gzip, level: 1}
layers:
  - name: system
    debs:
      packages: [$2]
      repositories:
        - {url: "file://$WORK/repo", suite: bookworm, components: [main], keyring: $WORK/keyring.gpg}
      lock: ${1%.yaml}.lock
YAML
}

# --- what dpkg would refuse ---------------------------------------------------------
refused() { # NAME PATTERN: the package locks, and its build is refused with exit 3
  spec "$1.yaml" "$1"
  check "$1 locks" "$PI" lock --spec "$1.yaml" -q
  expect_fail "$1 is refused: exit 3, $2" 3 "$2" "$PI" build "$1.yaml" -q -o "oci:$1:v1"
}
refused pi-evil-link "pi-evil-link 1.0 ships /usr/share as a symlink, where the image below has the directory /usr/share"
refused pi-evil-which "ships /usr/bin/run-parts, which is also in package debianutils .* of the base"
refused pi-evil-db "ships /var/lib/dpkg/(info/libc6.list|status) in /var/lib/dpkg"
refused pi-evil-conffiles "its control file has a 'Conffiles' field, which dpkg writes itself"
check "no refused image was written" bash -c 'for d in pi-evil-*; do [[ ! -d $d ]] || exit 1; done'

# --- the legitimate twins -----------------------------------------------------------
OURS="pi-which pi-doc pi-hello pi-vendor"
spec ok.yaml "${OURS// /, }"
check "the twins lock" "$PI" lock --spec ok.yaml -q
check "the twins build" bash -c "'$PI' build ok.yaml -o oci:ok:v1 2>ok.log"
check "the build says the takeover and the ldconfig step" bash -c \
  "grep -q '/usr/bin/run-parts from debianutils to pi-which (Replaces)' ok.log && grep -q 'ldconfig: /etc/ld.so.cache lists' ok.log"
umoci unpack --image ok:v1 bundle >/dev/null 2>&1
in_image() { run_in_bundle bundle "$@"; }
check "dpkg -V of the packages is clean" bash -c \
  "source '$SUPPORT/container.sh'; out=\$(run_in_bundle bundle dpkg -V $OURS); [[ -z \$out ]] || { echo \"\$out\"; false; }"
check "dpkg -V debianutils no longer checks the file it gave up" bash -c \
  "source '$SUPPORT/container.sh'; ! run_in_bundle bundle dpkg -V debianutils | grep -E 'bin/run-parts\$'"
check "dpkg -S /bin/run-parts names pi-which alone (ownership moved)" bash -c \
  "source '$SUPPORT/container.sh'; [[ \$(run_in_bundle bundle dpkg -S /bin/run-parts) == 'pi-which: /bin/run-parts' ]]"
check "dpkg -S /bin/pi-hello names pi-hello (./bin on a merged /usr)" bash -c \
  "source '$SUPPORT/container.sh'; [[ \$(run_in_bundle bundle dpkg -S /bin/pi-hello) == 'pi-hello: /bin/pi-hello' ]]"
check "apt-get check and dpkg --audit see a consistent system" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle sh -c 'apt-get check -q >/dev/null && test -z \"\$(dpkg --audit)\"'"
check "the taken-over run-parts and /bin/pi-hello run" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle sh -c 'run-parts x; pi-hello' | tr '\n' ' ' | grep -qx 'pi-run-parts x hello from /bin '"
check "/usr/share stayed a directory with the base's files and pi-doc's" bash -c \
  "[[ -d bundle/rootfs/usr/share && ! -L bundle/rootfs/usr/share && -d bundle/rootfs/usr/share/zoneinfo && -f bundle/rootfs/usr/share/pi-doc/README ]]"
check "the loader's cache lists libpivendor.so.1 in /opt/pivendor/lib (ldconfig -p in the image)" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle ldconfig -p | grep -q 'libpivendor.so.1 (libc6,x86-64) => /opt/pivendor/lib/libpivendor.so.1'"
check "the library loads by its SONAME alone (dlopen through the cache)" bash -c \
  "source '$SUPPORT/container.sh'; run_in_bundle bundle python3 -c 'import ctypes; print(ctypes.CDLL(\"libpivendor.so.1\").pi_vendor_answer())' | grep -qx 42"
check "this host's ldconfig reads the cache the layer wrote" bash -c \
  "ldconfig -p -C bundle/rootfs/etc/ld.so.cache | grep -q 'libpivendor.so.1 (libc6,x86-64) => /opt/pivendor/lib/libpivendor.so.1'"

# --- the same packages installed by apt-get in a chroot of the same rootfs ----------
cp -a "$BASE_ROOTFS" chroot
[[ -e chroot/dev/null ]] || mknod -m 666 chroot/dev/null c 1 3
mkdir -p chroot/tmp/debs
for p in $OURS; do cp repo/pool/main/${p}_1.0_amd64.deb chroot/tmp/debs/; done
check "apt-get install of the same packages in a chroot succeeds" bash -c \
  "chroot chroot env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(for p in $OURS; do printf '/tmp/debs/%s_1.0_amd64.deb ' "$p"; done) >apt.log 2>&1 || { tail apt.log; false; }"
check "the file lists, md5sums, conffiles and triggers dpkg wrote are the layer's" bash -c '
  for p in '"$OURS"' debianutils; do
    for ext in list md5sums conffiles triggers postinst; do
      a=chroot/var/lib/dpkg/info/$p.$ext; b=bundle/rootfs/var/lib/dpkg/info/$p.$ext
      [[ -e $a || -e $b ]] || continue
      diff <(sort "$a") <(sort "$b") || { echo "$p.$ext differs"; exit 1; }
    done
  done'
check "the status paragraphs hold the same fields and values" python3 - chroot bundle/rootfs $OURS <<'PY'
import sys
def paragraphs(root):
    out, cur, key = {}, {}, None
    for line in open(root + "/var/lib/dpkg/status").read().split("\n") + [""]:
        if not line:
            if cur: out[cur["Package"]] = cur
            cur, key = {}, None
        elif line[0] in " \t":
            cur[key] += "\n" + line
        else:
            key, _, v = line.partition(":")
            cur[key] = v.strip()
    return out
a, b = paragraphs(sys.argv[1]), paragraphs(sys.argv[2])
for p in sys.argv[3:] + ["debianutils"]:
    assert a[p] == b[p], (p, a[p], b[p])
assert set(a) == set(b), set(a) ^ set(b)
PY
check "ldconfig's cache after apt-get lists what the layer's lists, in the same order" bash -c \
  "diff <(ldconfig -p -C chroot/etc/ld.so.cache | sed '1s/ in cache .*//; /^Cache generated by/d') \
        <(ldconfig -p -C bundle/rootfs/etc/ld.so.cache | sed '1s/ in cache .*//; /^Cache generated by/d')"
check "the packages' paths, types and modes are those apt-get left" bash -c '
  tree() { (cd "$1" && find opt/pivendor usr/share/pi-doc usr/bin/run-parts usr/bin/pi-hello etc/ld.so.conf.d etc/pivendor.conf -printf "%p %y %m %l\n" | sort); }
  diff <(tree chroot) <(tree bundle/rootfs)'
finish
