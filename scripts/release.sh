#!/usr/bin/env bash
# Builds paddle-image's self-contained release archive from this tree:
#   DIST/paddle-image-VERSION-linux-amd64.tar.gz   the binary, the shared libraries it
#       needs beyond glibc (found through an RPATH relative to the binary), man pages,
#       shell completions, the docs and the copyright files of every bundled library,
#       and install.sh (packaging/archive/install.sh: puts it under a prefix where PATH,
#       man and the shells find it, with an uninstall)
#   DIST/paddle-image_VERSION-1_ARCH.deb            the Debian package: /usr/bin/paddle-image
#       on Debian 12's libraries (Depends: from dpkg-shlibdeps), man pages (gzip -9n),
#       completions, docs, copyright (from COPYRIGHT) and changelog.Debian.gz
#   DIST/NAME.tar.gz.spdx.json, DIST/DEB.spdx.json  SPDX 2.3 SBOMs: the archive's bundled
#       libraries (Debian package, version, purl, license, SHA-256), the .deb's Depends
#   DIST/SHA256SUMS                                 sha256sum -c checks it (the files above; image.digest too)
#   DIST/*.sig                                      with --key: cosign sign-blob signatures
#   DIST/paddle-image.intoto.jsonl                  with --key: the SLSA v1 provenance of
#       the files above, a signed in-toto statement (DSSE), as cosign attest-blob writes
#   DIST/paddle-image.pub                           the release's public key
#       (packaging/release/paddle-image.pub; its fingerprint is in the README, the
#       anchor a user checks it against: SHA256SUMS does not list it, since a key
#       vouched for by a file it signs itself proves nothing)
#   DIST/image (with --image)                       paddle-image's own image, an OCI layout
#       tagged VERSION, built by paddle-image from packaging/image/spec.yaml on
#       debian:12-slim (--image-base REF: another base), signed with SLSA provenance and
#       an SBOM attached when --key is given; named --image-name NAME, else
#       $PADDLE_IMAGE_RELEASE_IMAGE, else the placeholder registry.example.com/tools/paddle-image
#       (the name is in its labels and is the identity its signature is for). It runs as
#       uid:gid 65532:65532 with HOME=/home/nonroot. Its base is checked to be readable
#       before anything is written.
# The archive runs on any x86-64 Linux with glibc at least as new as the one its
# symbols need; that version is computed from the binary and libraries, written into
# the archive (share/doc/paddle-image/BUILD-INFO) and checked by bin/paddle-image, which
# says so and exits 126 on an older or another C library. Timestamps come from
# SOURCE_DATE_EPOCH (default: the commit's time), owners and order are fixed, and gzip
# stores no name or time, so packaging the same build twice gives the same bytes.
#
#   scripts/release.sh [--out DIST] [--build DIR] [--key cosign.key [--pub FILE]] [--no-deb]
#                      [--image [--image-base REF] [--image-name NAME]]
#
# --key must be the release key: its public half must be packaging/release/paddle-image.pub,
# or the public key --pub names (a test or a fork signing with its own key; that key is
# then the one in DIST). The passphrase comes from $COSIGN_PASSWORD, else a prompt.
# A release is meant to be made from a clean checkout of a commit: from a tree with
# uncommitted changes it is still made, with a warning, and its version says "dirty".
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/dist
BUILD=$ROOT/build-release
KEY=
PUB=$ROOT/packaging/release/paddle-image.pub
IMAGE=0
IMAGE_BASE=
IMAGE_NAME=${PADDLE_IMAGE_RELEASE_IMAGE:-registry.example.com/tools/paddle-image}
DEB=1

# --- helpers ---

# is_glibc SONAME: whether the library is glibc's own (the archive does not bundle it).
is_glibc() {
  case $1 in
  libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.* | libutil.so.* | \
    libanl.so.* | libmvec.so.* | libBrokenLocale.so.* | libnss_*.so.* | ld-linux*.so.* | linux-vdso.so.*) return 0 ;;
  esac
  return 1
}

# share_files SHARE: the completions where each shell looks, and the docs, under SHARE
# (the archive's share/, the .deb's usr/share/).
share_files() {
  install -D -m 0644 "$BUILD/share/completions/paddle-image.bash" "$1/bash-completion/completions/paddle-image"
  install -D -m 0644 "$BUILD/share/completions/_paddle-image" "$1/zsh/vendor-completions/_paddle-image"
  install -D -m 0644 "$BUILD/share/completions/paddle-image.fish" "$1/fish/vendor_completions.d/paddle-image.fish"
  mkdir -p "$1/doc/paddle-image"
  cp "$ROOT/README.md" "$ROOT/ARCHITECTURE.md" "$1/doc/paddle-image/"
  cp -r "$ROOT/docs" "$1/doc/paddle-image/docs"
}

# --- the steps, in the order main runs them ---

# parse_args ARGS...: the flags above into OUT, BUILD, KEY, PUB, IMAGE, IMAGE_BASE, IMAGE_NAME, DEB.
parse_args() {
  while [[ $# -gt 0 ]]; do
    case $1 in
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --key) KEY=$2; shift 2 ;;
    --pub) PUB=$2; shift 2 ;;
    --image) IMAGE=1; shift ;;
    --deb) DEB=1; shift ;;
    --no-deb) DEB=0; shift ;;
    --image-base) IMAGE_BASE=$2; shift 2 ;;
    --image-name) IMAGE_NAME=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
  done
}

# check_tools: the tools the release needs; a warning for uncommitted changes;
# SOURCE_DATE_EPOCH (default: the commit's time).
check_tools() {
  for tool in cmake ninja git python3 ldd objdump dpkg-query dpkg gzip tar sha256sum; do
    command -v "$tool" >/dev/null || { echo "release.sh: $tool is needed (run scripts/setup.sh)" >&2; exit 2; }
  done
  if [[ -n $(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    echo "release.sh: warning: $ROOT has uncommitted changes; the release says so (version: dirty) and no commit reproduces it" >&2
  fi
  export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}
}

# build_binary: BIN, the Release build with the archive's RPATH. Its compile flags are the
# test build's (scripts/test.sh), so ccache serves every object and only the link is new.
build_binary() {
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPADDLE_IMAGE_WERROR=ON \
    -DPADDLE_IMAGE_TESTS=OFF '-DPADDLE_IMAGE_BUNDLE_RPATH=$ORIGIN/../lib' >/dev/null
  ninja -C "$BUILD" paddle-image pi_share >/dev/null
  BIN=$BUILD/cli/paddle-image
}

# read_version: VERSION, REV (the revision the .deb's changelog names), DIRTY, NAME, and
# TMP, removed on exit.
read_version() {
  { read -r VERSION; read -r REV; read -r DIRTY; } < <("$BIN" version --json | python3 -c 'import json, sys
j = json.load(sys.stdin); g = j["git"]
print(j["version"]); print(g["revision"] or "unknown"); print("dirty" if g["dirty"] else "clean")')
  [[ -n ${VERSION:-} && -n ${REV:-} ]] || { echo "release.sh: $BIN version --json did not say its version" >&2; exit 1; }
  NAME=paddle-image-$VERSION-linux-amd64
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
}

# check_release_key: what can stop the release is checked before anything is written to
# DIST. The key: its public half must be the release's public key (a signature made with
# it verifies with that key); this also asks for the passphrase once, up front.
check_release_key() {
  [[ -s $PUB ]] || { echo "release.sh: the public key $PUB is missing" >&2; exit 2; }
  if [[ -n $KEY ]]; then
    echo "paddle-image release key check" >"$TMP/key-check"
    if ! "$BIN" sign-blob "$TMP/key-check" --key "$KEY" --output-signature "$TMP/key-check.sig" >/dev/null 2>"$TMP/key-check.err"; then
      cat "$TMP/key-check.err" >&2
      echo "release.sh: cannot sign with $KEY" >&2
      exit 2
    fi
    if ! "$BIN" verify-blob "$TMP/key-check" --key "$PUB" --signature "$TMP/key-check.sig" >/dev/null 2>&1; then
      echo "release.sh: $KEY is not the release key: its public half is not $PUB." \
        "Sign with the release key, or name the public key of this one with --pub FILE (it then goes into the release)" >&2
      exit 2
    fi
  fi
}

# check_image_base: for the own image, Debian's CA bundle and a base that can be read.
check_image_base() {
  local rc
  if [[ $IMAGE -eq 1 ]]; then
    # debian:12-slim has no CA bundle: without one the tool in the image verifies no registry.
    if [[ ! -s /etc/ssl/certs/ca-certificates.crt ]]; then
      echo "release.sh: --image needs Debian's CA bundle /etc/ssl/certs/ca-certificates.crt (apt-get install ca-certificates)" >&2
      exit 1
    fi
    BASE=${IMAGE_BASE:-$(sed -n 's/^base: *//p' "$ROOT/packaging/image/spec.yaml" | head -1)}
    rc=0
    "$BIN" inspect "$BASE" >/dev/null 2>"$TMP/base.err" || rc=$?
    if [[ $rc -ne 0 ]]; then
      echo "release.sh: --image: cannot read the base image $BASE: $(grep -v '^$' "$TMP/base.err" | head -1)" >&2
      echo "release.sh: nothing was written. Make the base readable (an oci: layout must exist; for a registry," \
        "check the network and log in with paddle-image login), or build on another with --image-base REF" >&2
      exit "$rc"
    fi
  fi
}

# stage_binary_and_libraries: STAGE with the binary and every library it loads, directly
# or not, except glibc's own (ldd lists the whole closure), each under its soname with its
# package's copyright file; LIBS and TMP/libs.tsv (the same, tab-separated with the
# architecture, for the SBOM and provenance).
stage_binary_and_libraries() {
  STAGE=$TMP/$NAME
  mkdir -p "$STAGE/bin" "$STAGE/libexec" "$STAGE/lib" "$STAGE/share/doc/paddle-image/licenses"
  install -m 0755 "$BIN" "$STAGE/libexec/paddle-image"
  LIBS=()
  : >"$TMP/libs.tsv" # the same, tab-separated with the architecture, for the SBOM and provenance
  local -a sonames=() paths=() reals=()
  local soname path real pkg line
  while read -r soname path; do
    is_glibc "$soname" && continue
    sonames+=("$soname") paths+=("$path") reals+=("$(readlink -f "$path")")
  done < <(ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  # One dpkg -S and one dpkg-query for them all (each call reads dpkg's whole database:
  # once per library took 12 s of a 37 s packaging). A path's owner is the first
  # package dpkg names for it ("libssl3:amd64: /usr/lib/...").
  local -A owner=() version=() arch=()
  while IFS= read -r line; do
    path=/${line#*: /}
    [[ -n ${owner[$path]:-} ]] || owner[$path]=${line%%:*}
  done < <(((${#reals[@]})) && dpkg -S "${reals[@]}" "${paths[@]}" 2>/dev/null || true)
  local -a pkgs=()
  for path in "${owner[@]}"; do pkgs+=("$path"); done
  while read -r pkg line; do
    [[ -n ${version[$pkg]:-} ]] || { version[$pkg]=${line% *} arch[$pkg]=${line##* }; }
  done < <(((${#pkgs[@]})) && dpkg-query -W -f '${Package} ${Version} ${Architecture}\n' "${pkgs[@]}" 2>/dev/null || true)
  local i
  for i in "${!sonames[@]}"; do
    soname=${sonames[$i]}
    install -m 0644 "${reals[$i]}" "$STAGE/lib/$soname"
    pkg=${owner[${reals[$i]}]:-${owner[${paths[$i]}]:-}}
    if [[ -n $pkg ]]; then
      cp "/usr/share/doc/$pkg/copyright" "$STAGE/share/doc/paddle-image/licenses/$pkg.copyright" 2>/dev/null || true
      LIBS+=("$soname $pkg ${version[$pkg]:-}")
      printf '%s\t%s\t%s\t%s\n' "$soname" "$pkg" "${version[$pkg]:-}" "${arch[$pkg]:-}" >>"$TMP/libs.tsv"
    else
      LIBS+=("$soname (no Debian package)")
      printf '%s\t\t\t\n' "$soname" >>"$TMP/libs.tsv"
    fi
  done
  if ldd "$BIN" | grep -q "not found"; then
    echo "release.sh: ldd cannot resolve every library of $BIN" >&2
    exit 1
  fi
}

# write_launcher: GLIBC_MIN, the newest glibc symbol version anything in the archive asks
# for, and bin/paddle-image, which checks the C library, then runs the binary next to it.
write_launcher() {
  GLIBC_MIN=$(objdump -T "$STAGE/libexec/paddle-image" "$STAGE"/lib/* 2>/dev/null |
    grep -oE '\(GLIBC_[0-9]+(\.[0-9]+)+\)|GLIBC_[0-9]+(\.[0-9]+)+' | grep -oE '[0-9]+(\.[0-9]+)+' | sort -uV | tail -1)
  [[ -n $GLIBC_MIN ]] || { echo "release.sh: found no GLIBC symbol versions" >&2; exit 1; }

  # bin/paddle-image: checks the C library, then runs the binary next to it.
  cat >"$STAGE/bin/paddle-image" <<EOF
#!/bin/sh
# paddle-image $VERSION, self-contained: libexec/paddle-image and the libraries it needs
# beyond glibc (lib/). It needs glibc $GLIBC_MIN or later (share/doc/paddle-image/BUILD-INFO).
need=$GLIBC_MIN
EOF
  cat >>"$STAGE/bin/paddle-image" <<'EOF'
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')
if [ -z "$have" ]; then
  echo "paddle-image: this build needs glibc $need or later, and this system's C library is not glibc" \
    "(musl?); install paddle-image from your distribution or build it from source (README)" >&2
  exit 126
fi
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -t. -k1,1n -k2,2n -k3,3n | head -n1)" != "$need" ]; then
  echo "paddle-image: this build needs glibc $need or later; this system has glibc $have." \
    "Use a newer distribution, or build paddle-image from source (README)" >&2
  exit 126
fi
here=$(dirname "$(readlink -f "$0")")
exec "$here/../libexec/paddle-image" "$@"
EOF
  chmod 0755 "$STAGE/bin/paddle-image"
}

# stage_share_files: man pages, completions, docs, COPYRIGHT, install.sh and BUILD-INFO.
stage_share_files() {
  cp -r "$BUILD/share/man" "$STAGE/share/man"
  share_files "$STAGE/share"
  cp "$ROOT/COPYRIGHT" "$STAGE/share/doc/paddle-image/"
  install -m 0755 "$ROOT/packaging/archive/install.sh" "$STAGE/install.sh"
  {
    "$BIN" version
    echo
    echo "Needs: x86-64 Linux, glibc $GLIBC_MIN or later (the newest GLIBC_ symbol version of the binary and its libraries)."
    echo "Run: bin/paddle-image (link it into your PATH; it finds libexec/ and lib/ next to itself),"
    echo "or install it with its man pages and completions: ./install.sh [--prefix DIR] (default /usr/local)."
    echo
    echo "Bundled libraries (soname, Debian package, version; copyright files in licenses/):"
    printf '  %s\n' "${LIBS[@]}"
  } >"$STAGE/share/doc/paddle-image/BUILD-INFO"
}

# pack_archive: a reproducible tarball: fixed order, owners, modes and times; gzip without
# name or time, at gzip's default level: -9 took 7.8 s for 26.31 MB, -6 takes 2.8 s for
# 26.45 MB (0.5% more; the libraries are most of it, already dense).
pack_archive() {
  chmod -R u=rwX,go=rX "$STAGE"
  mkdir -p "$OUT"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --format=gnu \
    -C "$TMP" -cf - "$NAME" | gzip -6n >"$OUT/$NAME.tar.gz.tmp"
  mv "$OUT/$NAME.tar.gz.tmp" "$OUT/$NAME.tar.gz"
  echo "release.sh: $OUT/$NAME.tar.gz ($(du -h "$OUT/$NAME.tar.gz" | cut -f1), ${#LIBS[@]} bundled libraries, glibc >= $GLIBC_MIN)"
}

# build_deb: DEBNAME, the Debian package: the same binary without the archive's RPATH (it
# uses Debian's libraries), stripped as dh_strip does; a tree with fixed modes and times,
# packed by dpkg-deb with root as owner (SOURCE_DATE_EPOCH clamps its member times).
build_deb() {
  DEBNAME=
  if [[ $DEB -eq 1 ]]; then
    for tool in dpkg-deb dpkg-shlibdeps strip md5sum; do
      command -v "$tool" >/dev/null || { echo "release.sh: the .deb needs $tool (apt-get install dpkg-dev binutils; or --no-deb)" >&2; exit 2; }
    done
    DEBVER=$VERSION-1
    ARCH=$(dpkg --print-architecture)
    DEBNAME=paddle-image_${DEBVER}_$ARCH.deb
    MAINT=$(sed -n 's/^Maintainer: //p' "$ROOT/packaging/deb/control" | head -1)
    D=$TMP/deb/debian/paddle-image
    DOC=$D/usr/share/doc/paddle-image
    mkdir -p "$D/DEBIAN" "$D/usr/bin" "$D/usr/share/man/man1" "$DOC"
    install -m 0755 "$BIN" "$D/usr/bin/paddle-image"
    printf 'file(RPATH_REMOVE FILE "${F}")\n' >"$TMP/rpath-remove.cmake"
    cmake -DF="$D/usr/bin/paddle-image" -P "$TMP/rpath-remove.cmake" >/dev/null
    strip --remove-section=.comment --remove-section=.note --strip-unneeded "$D/usr/bin/paddle-image"
    for page in "$BUILD"/share/man/man1/*.1; do
      gzip -9n -c "$page" >"$D/usr/share/man/man1/$(basename "$page").gz"
    done
    share_files "$D/usr/share"
    # The one lintian tag this package overrides, with the reason (in the file).
    install -D -m 0644 "$ROOT/packaging/deb/lintian-overrides" "$D/usr/share/lintian/overrides/paddle-image"
    # copyright: machine-readable (DEP-5); its terms are the tree's COPYRIGHT file, verbatim.
    {
      echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
      echo "Upstream-Name: paddle-image"
      echo "Upstream-Contact: $MAINT"
      echo
      echo "Files: *"
      echo "Copyright: $(sed -n 's/^Copyright //p' "$ROOT/COPYRIGHT" | head -1)"
      echo "License: paddle-image-terms"
      echo
      echo "License: paddle-image-terms"
      sed 's/^$/./; s/^/ /' "$ROOT/COPYRIGHT"
    } >"$DOC/copyright"
    {
      echo "paddle-image ($DEBVER) unstable; urgency=medium"
      echo
      echo "  * Release $VERSION."
      echo "    Built from git revision $REV."
      [[ $DIRTY == clean ]] || echo "    The tree had uncommitted changes."
      echo
      echo " -- $MAINT  $(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")"
    } | gzip -9n >"$DOC/changelog.Debian.gz"
    # Depends: what the binary links, as dpkg-shlibdeps reads it from the libraries'
    # symbols and shlibs files (it wants a debian/control above the tree).
    cp "$ROOT/packaging/deb/control" "$TMP/deb/debian/control"
    DEPENDS=$(cd "$TMP/deb" && dpkg-shlibdeps -O -e debian/paddle-image/usr/bin/paddle-image 2>"$TMP/shlibdeps.err" |
      sed -n 's/^shlibs:Depends=//p') || true
    [[ -n $DEPENDS ]] || { echo "release.sh: dpkg-shlibdeps computed no Depends:" >&2; cat "$TMP/shlibdeps.err" >&2; exit 1; }
    chmod -R u=rwX,go=rX "$D"
    SIZE=$(find "$D" -path "$D/DEBIAN" -prune -o -type f -printf '%s\n' | awk '{k += int(($1 + 1023) / 1024)} END {print k}')
    # DEBIAN/control: the binary stanza of packaging/deb/control, with what is computed.
    BINSTANZA=$(sed -n '/^Package:/,$p' "$ROOT/packaging/deb/control")
    {
      sed '/^Description:/,$d; /^Architecture:/d' <<<"$BINSTANZA"
      echo "Version: $DEBVER"
      echo "Architecture: $ARCH"
      echo "Installed-Size: $SIZE"
      echo "Depends: $DEPENDS"
      sed -n '/^Description:/,$p' <<<"$BINSTANZA"
    } >"$D/DEBIAN/control"
    (cd "$D" && find usr -type f | LC_ALL=C sort | xargs md5sum) >"$D/DEBIAN/md5sums"
    chmod 0644 "$D/DEBIAN/control" "$D/DEBIAN/md5sums"
    find "$D" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    dpkg-deb --root-owner-group -Zxz --build "$D" "$OUT/$DEBNAME.tmp" >/dev/null
    mv "$OUT/$DEBNAME.tmp" "$OUT/$DEBNAME"
    echo "release.sh: $OUT/$DEBNAME ($(du -h "$OUT/$DEBNAME" | cut -f1); Depends: $DEPENDS)"
  fi
}

# SBOMs (SPDX 2.3 JSON, written by the binary itself: paddle-image release-supply-chain,
# builder/release_supply_chain.cpp): NAME.tar.gz.spdx.json lists paddle-image (version,
# repository, commit) and every bundled library as the Debian package it came from
# (version, purl, declared license, the file's SHA-256 as bundled); DEB.spdx.json the
# .deb and its Depends at the versions installed here. Times from SOURCE_DATE_EPOCH,
# namespaces from the files' SHA-256: the same release, the same bytes. First the facts
# (what the release was made from and with) that the SBOMs and the provenance read.
# Sets RELEASE_FILES, the files the provenance, SHA256SUMS and the signatures cover.
write_sboms() {
  SUPPLY=("$BIN" release-supply-chain)
  SOURCE_REPO=$(sed -n 's/^  source: *//p' "$ROOT/packaging/image/spec.yaml" | head -1)
  CMD=(scripts/release.sh)
  [[ -z $KEY ]] || CMD+=(--key "$(basename "$KEY")")
  [[ $DEB -eq 1 ]] || CMD+=(--no-deb)
  [[ $IMAGE -eq 0 ]] || CMD+=(--image)
  [[ -z $IMAGE_BASE ]] || CMD+=(--image-base "$(sed -E 's#^(oci|docker-archive):/.*/#\1:#' <<<"$IMAGE_BASE")")
  local tools=() t
  for t in "cmake --version" "ninja --version" "gcc -dumpfullversion" "g++ -dumpfullversion" "tar --version" \
    "gzip --version" "python3 --version"; do
    tools+=(--tool "${t%% *}=$($t 2>/dev/null | head -1 || true)")
  done
  "${SUPPLY[@]}" facts --build "$BUILD" --repository "$SOURCE_REPO" --epoch "$SOURCE_DATE_EPOCH" \
    --glibc-min "$GLIBC_MIN" "${tools[@]}" -o "$TMP/facts.json" -- "${CMD[@]}"
  RELEASE_FILES=("$NAME.tar.gz" ${DEBNAME:+"$DEBNAME"} "$NAME.tar.gz.spdx.json" ${DEBNAME:+"$DEBNAME.spdx.json"})
  "${SUPPLY[@]}" sbom-archive --archive "$OUT/$NAME.tar.gz" --libs "$TMP/libs.tsv" --facts "$TMP/facts.json" \
    -o "$OUT/$NAME.tar.gz.spdx.json"
  if [[ -n $DEBNAME ]]; then
    "${SUPPLY[@]}" sbom-deb --deb "$OUT/$DEBNAME" --deb-version "$(dpkg-deb -f "$OUT/$DEBNAME" Version)" \
      --deb-arch "$(dpkg-deb -f "$OUT/$DEBNAME" Architecture)" --deb-depends "$(dpkg-deb -f "$OUT/$DEBNAME" Depends)" \
      --facts "$TMP/facts.json" -o "$OUT/$DEBNAME.spdx.json"
  else
    rm -f "$OUT"/paddle-image_*.deb.spdx.json
  fi
}

# SLSA v1 provenance of the release files, signed (with --key only: unsigned, it would
# prove nothing): one in-toto statement whose subjects are the files above, in a DSSE
# envelope on one line, as slsa-github-generator's multiple.intoto.jsonl. Checked by
# `paddle-image verify-blob-attestation` and `cosign verify-blob-attestation`.
write_provenance() {
  rm -f "$OUT/paddle-image.intoto.jsonl"
  if [[ -n $KEY ]]; then
    "${SUPPLY[@]}" provenance --libs "$TMP/libs.tsv" --facts "$TMP/facts.json" -o "$TMP/provenance.json"
    "$BIN" attest-blob "${RELEASE_FILES[@]/#/$OUT/}" --predicate "$TMP/provenance.json" --type slsaprovenance1 \
      --key "$KEY" --output-attestation "$OUT/paddle-image.intoto.jsonl" >/dev/null
  fi
}

# build_own_image: paddle-image's own image: the archive as it unpacks, the CA bundle,
# built by itself.
build_own_image() {
  if [[ $IMAGE -eq 1 ]]; then
    CTX=$TMP/image
    mkdir -p "$CTX/root/opt/paddle-image" "$CTX/root/etc/ssl/certs" "$CTX/home"
    tar xzf "$OUT/$NAME.tar.gz" -C "$CTX/root/opt/paddle-image" --strip-components=1
    rm "$CTX/root/opt/paddle-image/install.sh" # the archive's installer, of no use in the image
    install -m 0644 /etc/ssl/certs/ca-certificates.crt "$CTX/root/etc/ssl/certs/ca-certificates.crt"
    # The archive's SBOM where apko images keep theirs and syft reads them: the image's
    # SBOM (paddle-image sbom, build --sign) lists the bundled libraries from it.
    install -D -m 0644 "$OUT/$NAME.tar.gz.spdx.json" "$CTX/root/var/lib/db/sbom/paddle-image.spdx.json"
    cp /usr/share/doc/ca-certificates/copyright "$CTX/root/opt/paddle-image/share/doc/paddle-image/licenses/ca-certificates.copyright"
    VERSION="$VERSION" IMAGE_BASE="$IMAGE_BASE" IMAGE_NAME="$IMAGE_NAME" python3 - "$ROOT/packaging/image/spec.yaml" >"$CTX/spec.yaml" <<'PY'
import os, re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"(?m)^  name: .*$", lambda m: "  name: " + os.environ["IMAGE_NAME"], text, count=1)
text = re.sub(r"(?m)^  version: .*$", lambda m: '  version: "%s"' % os.environ["VERSION"], text, count=1)
if os.environ["IMAGE_BASE"]:
    text = re.sub(r"(?m)^base: .*$", lambda m: "base: " + os.environ["IMAGE_BASE"], text, count=1)
sys.stdout.write(text)
PY
    rm -rf "$OUT/image"
    args=(build "$CTX/spec.yaml" --output "oci:$OUT/image:$VERSION" --source-date-epoch "$SOURCE_DATE_EPOCH"
      --cache-dir "$BUILD/image-cache" --digest-file "$OUT/image.digest" -q)
    [[ -z $KEY ]] || args+=(--sign --key "$KEY")
    # the commit, for the image's revision label and its provenance's source
    local revision=$REV
    [[ $DIRTY == clean ]] || revision+=-dirty
    args+=(--revision "$revision")
    "$BIN" "${args[@]}" >/dev/null
    echo "release.sh: $OUT/image:$VERSION ($(cat "$OUT/image.digest"))${KEY:+, signed, with provenance and SBOM}"
  fi
}

# write_sums_and_signatures: SHA256SUMS, after every file it lists (the image's digest
# too), the signatures, and the public key.
write_sums_and_signatures() {
  SUMS=("${RELEASE_FILES[@]}")
  [[ $IMAGE -eq 0 ]] || SUMS+=(image.digest)
  (cd "$OUT" && sha256sum "${SUMS[@]}" >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
  # a run without --key leaves no stale signature
  rm -f "$OUT/$NAME.tar.gz.sig" "$OUT/SHA256SUMS.sig" "$OUT"/paddle-image_*.deb.sig "$OUT"/*.spdx.json.sig
  if [[ -n $KEY ]]; then
    for f in "${RELEASE_FILES[@]}" SHA256SUMS; do
      "$BIN" sign-blob "$OUT/$f" --key "$KEY" --output-signature "$OUT/$f.sig" >/dev/null
    done
  fi
  install -m 0644 "$PUB" "$OUT/paddle-image.pub"
}

main() {
  parse_args "$@"
  check_tools
  build_binary
  read_version
  check_release_key
  check_image_base
  stage_binary_and_libraries
  write_launcher
  stage_share_files
  pack_archive
  build_deb
  write_sboms
  write_provenance
  build_own_image
  write_sums_and_signatures
}

main "$@"
