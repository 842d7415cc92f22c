#!/usr/bin/env bash
# Fetch (once, cached) the Debian packages that paddle-image's .deb and man-db need
# beyond the suite's minimal Debian 12 rootfs, as a local apt repository (a flat
# Packages index), so that the release test installs the package with
# `apt-get install ./paddle-image_*.deb` in a copy of that rootfs with no network.
#   fetch-debs.sh OUTDIR ROOTFS   -> OUTDIR/*.deb, OUTDIR/Packages, OUTDIR/.done
# The roots are the runtime packages of the libraries paddle-image links (what
# dpkg-shlibdeps puts in the .deb's Depends) and man-db; the closure comes from this
# host's apt, less what the rootfs already has. A library added to the binary shows up
# in the release test as an unmet dependency naming the package to add here.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 OUTDIR ROOTFS" >&2; exit 2; }
out=$1
rootfs=$2
ROOTS=(libarchive13 libc6 libcurl4 libgcc-s1 libsodium23 libssl3 libstdc++6 libtomlplusplus3
  libyaml-cpp0.7 libzstd1 zlib1g man-db)
stamp=$(printf '%s\n' "${ROOTS[@]}" | sha256sum | cut -c1-16)
[[ -f "$out/.done" && $(cat "$out/.done") == "$stamp" ]] && { echo "fetch-debs: cached at $out" >&2; exit 0; }
[[ -f "$rootfs/var/lib/dpkg/status" ]] || { echo "fetch-debs: $rootfs is not a Debian rootfs" >&2; exit 1; }
for tool in apt-cache apt-get dpkg-scanpackages; do
  command -v "$tool" >/dev/null || { echo "fetch-debs: $tool is needed (apt-get install dpkg-dev)" >&2; exit 1; }
done
tmp="$out.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
have=$(awk '/^Package:/ {p = $2} /^Status: install ok installed/ {print p}' "$rootfs/var/lib/dpkg/status" | sort -u)
want=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
  --no-enhances "${ROOTS[@]}" | grep -E '^[a-z0-9]' | sort -u)
need=$(comm -23 <(echo "$want") <(echo "$have"))
[[ -n $need ]] || { echo "fetch-debs: the rootfs already has everything" >&2; exit 1; }
# shellcheck disable=SC2086
(cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root $need >/dev/null)
(cd "$tmp" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null)
echo "$stamp" >"$tmp/.done"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "fetch-debs: $(ls "$out"/*.deb | wc -l) packages ($(du -sh "$out" | cut -f1)) in $out" >&2
