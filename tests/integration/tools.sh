#!/usr/bin/env bash
# Independent tools read what we write: umoci, skopeo, podman; zstd layers convert
# with skopeo and decompress to their diff_ids.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
cd "$WORK"
make_project proj

"$PI" build proj/spec.yaml -q -o oci:lay -o docker-archive:img.tar >/dev/null
check "umoci unpack accepts the layout" umoci unpack --image lay:v1 bundle
check "unpacked tree has the app" test -f bundle/rootfs/app/train.py
check "unpacked tree has the wheel" test -f bundle/rootfs/usr/local/lib/python3.11/dist-packages/purepkg/__init__.py
check "skopeo inspect oci:" skopeo inspect oci:lay:v1
check "skopeo inspect docker-archive:" skopeo inspect docker-archive:img.tar
tags=$(tar -xOf img.tar manifest.json)
check "docker-archive carries the repo tag" grep -q "example.com/team/app:v1" <<<"$tags"
export PODMAN_TMP=$WORK/podman
loaded=$(podman_load img.tar 2>&1) || true
check "podman load accepts the docker-archive" grep -q "example.com/team/app:v1" <<<"$loaded"
podman_cleanup >/dev/null 2>&1 || true

"$PI" build proj/spec.yaml -q --compression zstd -o oci:zlay:z -o docker-archive:zimg.tar >/dev/null
check "zstd image as docker-archive (layers decompressed) reads in skopeo" skopeo inspect docker-archive:zimg.tar
mt=$(skopeo inspect --raw oci:zlay:z | python3 -c 'import json,sys; print({l["mediaType"] for l in json.load(sys.stdin)["layers"]})')
check "zstd layers use the tar+zstd media type" grep -q "tar+zstd" <<<"$mt"
check "skopeo copy converts the zstd image" skopeo copy -q --dest-compress-format gzip oci:zlay:z oci:converted:z
check "umoci unpacks the converted image" umoci unpack --image converted:z zbundle
check "same tree after conversion" diff -r bundle/rootfs zbundle/rootfs
zstd_ok=1
d=$(manifest_digest zlay z)
cfg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"])' "zlay/blobs/sha256/${d#sha256:}")
mapfile -t diff_ids < <(python3 -c 'import json,sys; [print(x) for x in json.load(open(sys.argv[1]))["rootfs"]["diff_ids"]]' "zlay/blobs/sha256/${cfg#sha256:}")
i=0
while read -r l; do
  got="sha256:$(zstd -dc "zlay/blobs/sha256/${l#sha256:}" | sha256sum | cut -d' ' -f1)"
  [[ "$got" == "${diff_ids[$i]}" ]] || zstd_ok=0
  i=$((i + 1))
done < <(layer_digests zlay z)
check "each zstd layer decompresses to its diff_id" test "$zstd_ok" = 1 -a "$i" = 3
i=0; gz_ok=1
d=$(manifest_digest lay v1)
cfg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"])' "lay/blobs/sha256/${d#sha256:}")
mapfile -t diff_ids < <(python3 -c 'import json,sys; [print(x) for x in json.load(open(sys.argv[1]))["rootfs"]["diff_ids"]]' "lay/blobs/sha256/${cfg#sha256:}")
while read -r l; do
  got="sha256:$(gzip -dc "lay/blobs/sha256/${l#sha256:}" | sha256sum | cut -d' ' -f1)"
  [[ "$got" == "${diff_ids[$i]}" ]] || gz_ok=0
  i=$((i + 1))
done < <(layer_digests lay v1)
check "each gzip layer decompresses (gzip -d) to its diff_id" test "$gz_ok" = 1
check "GNU tar lists every layer" bash -c 'for f in lay/blobs/sha256/*; do gzip -t "$f" 2>/dev/null && { tar -tzf "$f" >/dev/null || exit 1; }; done; true'
# ---- version: what this binary is ---------------------------------------------------------
"$PI" version --json >version.json
check "version --json names the git revision and dirtiness of the tree it was built from" /usr/bin/python3 -c '
import json, subprocess, sys
j = json.load(open("version.json")); root = sys.argv[1]
head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
assert j["version"] and j["build_type"] and j["compiler"], j
assert j["git"]["revision"] in (head, "unknown"), (j["git"], head)
assert isinstance(j["git"]["dirty"], bool), j["git"]' "$ROOT"
check "... and the libraries linked in, as Debian packages them" /usr/bin/python3 -c '
import json, re, subprocess
libs = json.load(open("version.json"))["libraries"]
for name, pkg in [("libcurl", "libcurl4"), ("libarchive", "libarchive13"), ("zstd", "libzstd1"),
                  ("openssl", "libssl3"), ("libsodium", "libsodium23"), ("yaml-cpp", "libyaml-cpp0.7")]:
    v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True).stdout
    upstream = re.sub(r"^[0-9]+:", "", v).split("-")[0].split("+")[0]
    assert upstream.startswith(libs[name]) or libs[name].startswith(upstream), (name, libs[name], v)'
check "--version prints the same first line as version" bash -c \
  "test \"\$('$PI' --version | head -1)\" = \"\$('$PI' version | head -1)\" && '$PI' --version | head -1 | grep -q '^paddle-image [0-9.]* (git '"
finish
