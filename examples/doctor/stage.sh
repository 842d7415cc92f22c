#!/usr/bin/env bash
# Stages paddle-image and the shared libraries it links against into ./rootfs, so
# spec.yaml can package the doctor as a small image (the tool packages itself):
#   examples/doctor/stage.sh [path/to/paddle-image]
#   paddle-image build examples/doctor/spec.yaml -o oci:doctor-image:latest
# Then copy it to your registry and render the DaemonSet:
#   skopeo copy oci:doctor-image:latest docker://REGISTRY/paddle-image-doctor:latest
#   paddle-image doctor --render daemonset --doctor-image REGISTRY/paddle-image-doctor:latest
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${1:-$HERE/../../build/cli/paddle-image}
[[ -x "$BIN" ]] || { echo "stage.sh: $BIN is not built (run scripts/build.sh)" >&2; exit 1; }
TMP="$HERE/rootfs.tmp.$$"
trap 'rm -rf "$TMP"' EXIT
rm -rf "$TMP"
mkdir -p "$TMP/usr/local/bin" "$TMP/host" "$TMP/tmp"
cp -L "$BIN" "$TMP/usr/local/bin/paddle-image"
# Every library the binary needs, at the path the dynamic loader uses (no symlinks).
ldd "$BIN" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' | sort -u | while read -r lib; do
  mkdir -p "$TMP$(dirname "$lib")"
  cp -L "$lib" "$TMP$lib"
done
chmod 1777 "$TMP/tmp"
rm -rf "$HERE/rootfs"
mv "$TMP" "$HERE/rootfs"
trap - EXIT
echo "staged $(find "$HERE/rootfs" -type f | wc -l) files into $HERE/rootfs"
