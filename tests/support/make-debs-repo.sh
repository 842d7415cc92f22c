#!/usr/bin/env bash
# Make (once, cached) the apt repositories the debs layer tests install from, with no
# network during the tests:
#   OUTDIR/repo/         real Debian packages (apt-get download, this host's suite),
#                        indexed (dpkg-scanpackages, apt-ftparchive) and signed with a
#                        test key: dists/SUITE/{InRelease,Release,Release.gpg}
#   OUTDIR/keyring.gpg   the test key's public keyring; OUTDIR/other-keyring.gpg another key's
#   OUTDIR/debian/       Debian's own signed InRelease and main Packages.xz for the suite,
#                        as the mirror serves them (the test resolves against them with
#                        /usr/share/keyrings/debian-archive-keyring.gpg)
# The packages: libgl1 (its closure reaches the base's libc6 and friends), tcl-signal
# (an alternative: libtcl8.6 | libtcl), python3-async-timeout (an alternative the base's
# python3 satisfies; dh_python3's postinst), lua5.1 (a postinst that registers an
# alternative: refused), and the libraries OpenCV wheels need that Paddle Dockerfiles install
# (libglib2.0-0 libgomp1 libsm6 libxext6 libxrender1: the Dockerfile corpus test).
#   make-debs-repo.sh OUTDIR ROOTFS
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 OUTDIR ROOTFS" >&2; exit 2; }
out=$1
rootfs=$2
SUITE=${SUITE:-bookworm}
ROOTS=(libgl1 tcl-signal python3-async-timeout lua5.1 libglib2.0-0 libgomp1 libsm6 libxext6 libxrender1)
stamp=$(printf '%s\n' "$SUITE" "${ROOTS[@]}" v1 | sha256sum | cut -c1-16)
[[ -f "$out/.done" && $(cat "$out/.done") == "$stamp" ]] && { echo "make-debs-repo: cached at $out" >&2; exit 0; }
[[ -f "$rootfs/var/lib/dpkg/status" ]] || { echo "make-debs-repo: $rootfs is not a Debian rootfs" >&2; exit 1; }
for tool in apt-cache apt-get dpkg-scanpackages apt-ftparchive gpg curl xz; do
  command -v "$tool" >/dev/null || { echo "make-debs-repo: $tool is needed (scripts/setup.sh --test)" >&2; exit 1; }
done
tmp="$out.tmp.$$"
rm -rf "$tmp"
trap 'GNUPGHOME="$tmp/gnupg" gpgconf --kill gpg-agent 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/repo/pool/main" "$tmp/repo/dists/$SUITE/main/binary-amd64" "$tmp/gnupg"
chmod 700 "$tmp/gnupg"
export GNUPGHOME="$tmp/gnupg"
have=$(awk '/^Package:/ {p = $2} /^Status: install ok installed/ {print p}' "$rootfs/var/lib/dpkg/status" | sort -u)
want=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
  --no-enhances "${ROOTS[@]}" | grep -E '^[a-z0-9]' | sort -u)
need=$(comm -23 <(echo "$want") <(echo "$have"))
# shellcheck disable=SC2086
(cd "$tmp/repo/pool/main" && apt-get download -q -o APT::Sandbox::User=root $need >/dev/null)
(cd "$tmp/repo" && dpkg-scanpackages --multiversion pool /dev/null >"dists/$SUITE/main/binary-amd64/Packages" 2>/dev/null)
xz -k -9 "$tmp/repo/dists/$SUITE/main/binary-amd64/Packages"
(cd "$tmp/repo/dists/$SUITE" && apt-ftparchive -o APT::FTPArchive::Release::Suite="$SUITE" \
  -o APT::FTPArchive::Release::Codename="$SUITE" -o APT::FTPArchive::Release::Architectures=amd64 \
  -o APT::FTPArchive::Release::Components=main release . >Release)
gpg --batch --quiet --passphrase '' --quick-gen-key "paddle-image test repository <repo@test.invalid>" ed25519 sign never
gpg --batch --quiet --export "repo@test.invalid" >"$tmp/keyring.gpg"
gpg --batch --quiet --passphrase '' --quick-gen-key "another key <other@test.invalid>" ed25519 sign never
gpg --batch --quiet --export "other@test.invalid" >"$tmp/other-keyring.gpg"
gpg --batch --quiet --local-user "repo@test.invalid" --clearsign -o "$tmp/repo/dists/$SUITE/InRelease" "$tmp/repo/dists/$SUITE/Release"
gpg --batch --quiet --local-user "repo@test.invalid" -abs -o "$tmp/repo/dists/$SUITE/Release.gpg" "$tmp/repo/dists/$SUITE/Release"
# Debian's own index for the suite, as signed by Debian (the mirror this host uses).
mirror=$(awk '/^URIs:/ {u=$2} /^Suites:/ { for (i=2;i<=NF;i++) if ($i=="'"$SUITE"'") { print u; exit } }' \
  /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
mkdir -p "$tmp/debian/dists/$SUITE/main/binary-amd64"
curl -fsS -o "$tmp/debian/dists/$SUITE/InRelease" "$mirror/dists/$SUITE/InRelease"
curl -fsS -o "$tmp/debian/dists/$SUITE/main/binary-amd64/Packages.xz" "$mirror/dists/$SUITE/main/binary-amd64/Packages.xz"
gpgconf --kill gpg-agent 2>/dev/null || true # the agent key generation started, which outlives gpg
rm -rf "$tmp/gnupg"
echo "$stamp" >"$tmp/.done"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "make-debs-repo: $(ls "$out"/repo/pool/main/*.deb | wc -l) packages ($(du -sh "$out" | cut -f1)) in $out" >&2
