#!/usr/bin/env bash
# Build (once, cached) a minimal Debian bookworm rootfs with python3 for e2e tests.
# Usage: make-test-base.sh OUTDIR
# Produces: OUTDIR/rootfs/ (tree), OUTDIR/rootfs.tar, OUTDIR/python-version, OUTDIR/.done
# Env: MIRROR (default: first URI in /etc/apt/sources.list.d/debian.sources,
#      fallback http://deb.debian.org/debian), SUITE (default bookworm),
#      REUSE_FROM=DIR: another OUTDIR this script made for the same suite (the quick
#      start's .cache/example-base), copied instead of a second debootstrap.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "$0: must run as root (debootstrap)" >&2
    exit 1
fi

OUTDIR=$(realpath -m "$1")
SUITE=${SUITE:-bookworm}

if [[ -f "$OUTDIR/rootfs.tar" && -f "$OUTDIR/.done" ]]; then
    echo "make-test-base: cached at $OUTDIR" >&2
    exit 0
fi

if [[ -z "${MIRROR:-}" ]]; then
    MIRROR=""
    if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
        # First URIs: line of the stanza that carries the main suite (not -security).
        MIRROR=$(awk '/^URIs:/ {u=$2} /^Suites:/ { for (i=2;i<=NF;i++) if ($i=="'"$SUITE"'") { print u; exit } }' \
                 /etc/apt/sources.list.d/debian.sources)
    fi
    MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi

command -v debootstrap >/dev/null || { echo "debootstrap not installed" >&2; exit 1; }

# Remove a work dir, first unmounting anything debootstrap may have left
# mounted inside it (proc/sys during the second stage) if it was interrupted.
remove_tree() {
    local d=$1 m
    [[ -e "$d" ]] || return 0
    while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done < <(awk -v p="$d/" 'index($2, p) == 1 {print $2}' /proc/self/mounts | sort -r)
    rm -rf --one-file-system -- "$d"
}

TMP="$OUTDIR.tmp.$$"
trap 'remove_tree "$TMP"' EXIT
remove_tree "$TMP"
# Remove leftovers of earlier interrupted runs (other, dead PIDs).
for d in "$OUTDIR".tmp.*; do
    [[ -d "$d" ]] || continue
    pid=${d##*.tmp.}
    if [[ "$pid" =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null; then remove_tree "$d"; fi
done
mkdir -p "$TMP"

if [[ -n ${REUSE_FROM:-} && -f $REUSE_FROM/.done && -f $REUSE_FROM/rootfs.tar &&
      $(cat "$REUSE_FROM/suite" 2>/dev/null) == "$SUITE" ]]; then
    for f in rootfs rootfs.tar python-version rootfs.size build-seconds suite .done; do
        cp -a --reflink=auto -- "$REUSE_FROM/$f" "$TMP/$f"
    done
    remove_tree "$OUTDIR"
    mkdir -p "$(dirname "$OUTDIR")"
    mv -- "$TMP" "$OUTDIR"
    echo "make-test-base: copied from $REUSE_FROM (debootstrap $SUITE, made there)" >&2
    exit 0
fi

start=$(date +%s)
echo "make-test-base: debootstrap $SUITE from $MIRROR" >&2
debootstrap --variant=minbase --include=python3 "$SUITE" "$TMP/rootfs" "$MIRROR" >"$TMP/debootstrap.log" 2>&1 || {
    echo "debootstrap failed; log tail:" >&2
    tail -n 30 "$TMP/debootstrap.log" >&2
    exit 1
}
echo "make-test-base: debootstrap took $(( $(date +%s) - start ))s" >&2

R="$TMP/rootfs"
# Trim: apt caches/lists, docs, man pages, locales, logs.
rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/cache/apt/archives/partial/* \
       "$R"/var/cache/apt/*.bin "$R"/var/lib/apt/lists/* \
       "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/info/* \
       "$R"/usr/share/locale/* "$R"/usr/share/lintian "$R"/usr/share/linda \
       "$R"/var/log/*.log "$R"/var/log/apt/* "$R"/debootstrap
find "$R" -name __pycache__ -type d -prune -exec rm -rf {} +
# The tool skips special files: drop device nodes, fifos and sockets anywhere.
find "$R" \( -type b -o -type c -o -type p -o -type s \) -delete

# Python version, read from the rootfs itself.
pyver=""
for p in "$R"/usr/bin/python3.[0-9]*; do
    b=$(basename "$p")
    if [[ "$b" =~ ^python(3\.[0-9]+)$ ]]; then pyver=${BASH_REMATCH[1]}; fi
done
if [[ -z "$pyver" ]]; then
    pyver=$(chroot "$R" /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
fi
[[ -n "$pyver" ]] || { echo "could not determine python version in rootfs" >&2; exit 1; }
echo "$pyver" > "$TMP/python-version"
echo "$SUITE" > "$TMP/suite"

# Deterministic-ish tarball of the tree (numeric owners, sorted).
tar --numeric-owner --sort=name --xattrs -C "$R" -cf "$TMP/rootfs.tar" .
du -sh "$R" | cut -f1 > "$TMP/rootfs.size"
echo "$(( $(date +%s) - start ))" > "$TMP/build-seconds"
touch "$TMP/.done"

remove_tree "$OUTDIR"
mkdir -p "$(dirname "$OUTDIR")"
mv -- "$TMP" "$OUTDIR"
trap - EXIT
echo "make-test-base: done: $OUTDIR (python $pyver, $(cat "$OUTDIR/rootfs.size"))" >&2
