#!/usr/bin/env bash
# Files from another image (copy rules with image: and from:), end to end: a Dockerfile's
# COPY --from of a published image and of a stage that is only FROM IMAGE AS NAME migrate
# to image sources; lock --sources pins each to its manifest digest; the build reads the
# paths through the image's layers (only those that hold them: counted in a registry's
# access log), follows symlinks within the image, and runc runs what it copied. A moved
# tag, a path the image lacks, an unpinned source and a tampered blob are refused,
# naming the rule; a second build reads nothing again.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
registry_start open open "$WORK/reg"
R=$OPEN_HOST
blob_gets() { registry_access_count "$OPEN_LOG" GET '/v2/[^ ]*/blobs/sha256:' '20[06]'; }

debian_base_spec base.yaml
check "the Debian base builds" "$PI" build base.yaml -q -o oci:base:bookworm
# The image files come from: three layers, the tool in the top one, a link to it in
# the middle one, filler in the bottom one that no rule asks for.
mkdir -p tool/opt/tool/bin tool/opt/tool/share filler/opt/filler
printf '#!/bin/sh\necho "tool from another image: $*"\n' >tool/opt/tool/bin/tool
chmod 755 tool/opt/tool/bin/tool
echo "data" >tool/opt/tool/share/data.txt
head -c 3000000 /dev/urandom >filler/opt/filler/blob
cat >tool.yaml <<'YAML'
base: scratch
layers:
  - name: filler
    files: [{from: filler/, to: /}]
  - name: link
    files: [{symlink: /opt/tool/bin/tool, to: /usr/local/bin/tool}]
  - name: tool
    files: [{from: tool/, to: /}]
YAML
check "the source image builds and is pushed to the registry" bash -c \
  "'$PI' build tool.yaml -q -o oci:tool-img:v1 && '$PI' copy oci:tool-img:v1 $R/team/tool:v1 --insecure -q"

# --- a Dockerfile migrates -------------------------------------------------------------
mkdir -p proj
cat >proj/Dockerfile <<EOF
FROM $R/team/tool:v1 AS tools
FROM debian:bookworm
COPY --from=tools /opt/tool /opt/tool
COPY --from=$R/team/tool:v1 /usr/local/bin/tool /usr/local/bin/tool2
CMD ["/opt/tool/bin/tool", "hello"]
EOF
check "init maps both COPY --from lines" bash -c "'$PI' init --from-dockerfile proj/Dockerfile proj >init.log 2>&1 &&
  grep -q '0 instruction(s) not mapped' init.log && grep -c '      - image: \"$R/team/tool:v1\"' proj/spec.yaml | grep -qx 2"
sed -i "s|^base: .*|base: \"oci:$WORK/base:bookworm\"|" proj/spec.yaml
expect_fail "an unpinned image source is refused, naming the rule and the fix" 3 \
  "spec.yaml:[0-9]+:[0-9]+: image $R/team/tool:v1 has no digest for linux/amd64 in the spec or in spec.sources.lock" \
  "$PI" build proj/spec.yaml -o oci:img:t --insecure
check "lock --sources pins the image to its manifest digest" bash -c \
  "'$PI' lock --sources --spec proj/spec.yaml --insecure >lock.log 2>&1 &&
   grep -qF '\"digest\": \"$(manifest_digest tool-img v1)\"' proj/spec.sources.lock"
check "the spec builds, reading the image through the registry" "$PI" build proj/spec.yaml -q -o oci:img:t --insecure
# With the image's file tree known (a cache holding its view, as the registry cache
# shares it), only the layers that hold the paths are fetched: the tool's, whose files
# both rules take (the link in the middle layer is followed in the tree), not the link's
# nor the 3 MB filler.
gets() { grep -c "GET /v2/team/tool/blobs/sha256:$1" "$OPEN_LOG" || true; }
read -r filler link top <<<"$(layer_digests tool-img v1 | cut -d: -f2 | tr '\n' ' ')"
mkdir -p view-cache && cp -a cache/base-view view-cache/
f0=$(gets "$filler"); l0=$(gets "$link"); t0=$(gets "$top")
check "a cache with the tree builds the same image" bash -c \
  "'$PI' build proj/spec.yaml -q -o oci:img-v:t --insecure --cache-dir view-cache"
check "... fetching the one layer that holds the files, once" bash -c \
  "[[ $(gets "$filler") -eq $f0 && $(gets "$link") -eq $l0 && $(gets "$top") -eq $((t0 + 1)) ]]"
rm -rf bundle && umoci unpack --image img:t bundle >/dev/null
RUN_TIMEOUT=60 run_in_bundle bundle sh -c '/opt/tool/bin/tool hello; /usr/local/bin/tool2 via-link; cat /opt/tool/share/data.txt; stat -c "%a %U %n" /opt/tool/bin/tool /usr/local/bin/tool2' \
  >run.txt 2>&1 || true
check "runc runs the copied tool" grep -qx "tool from another image: hello" run.txt
check "a symlink named by from: is followed within the image: its target's file is copied" bash -c \
  "grep -qx 'tool from another image: via-link' run.txt && grep -qx '755 root /usr/local/bin/tool2' run.txt"
check "the directory's other files come with it" grep -qx data run.txt
before=$(blob_gets)
check "a second build from the same cache reads nothing again" "$PI" build proj/spec.yaml -q -o oci:img2:t --insecure
after=$(blob_gets)
check "... gives the same digest and fetches no blob" \
  [ "$(manifest_digest img t) $after" == "$(manifest_digest img2 t) $before" ]

# --- refusals ----------------------------------------------------------------------------
printf '#!/bin/sh\necho moved\n' >tool/opt/tool/bin/tool
check "the tag moves to a rebuilt image" bash -c \
  "'$PI' build tool.yaml -q -o oci:tool2-img:v1 && '$PI' copy oci:tool2-img:v1 $R/team/tool:v1 --insecure -q"
cat >moved.yaml <<YAML
base: scratch
layers:
  - name: t
    files: [{image: "oci:tool2-img:v1", from: /opt/tool, to: /opt/tool, digest: "$(manifest_digest tool-img v1)"}]
YAML
expect_fail "an image that no longer holds the pinned digest is refused, naming both" 3 \
  "moved.yaml:4:13: image oci:tool2-img:v1 now holds sha256:[0-9a-f]+ for linux/amd64, not the pinned sha256:" \
  "$PI" build moved.yaml -o oci:moved --cache-dir moved-cache
check "the registry's moved tag changes nothing: the build reads the pinned digest" \
  "$PI" build proj/spec.yaml -q -o oci:img3:t --insecure --cache-dir fresh-cache
check "... the same image as before the move" [ "$(manifest_digest img t)" == "$(manifest_digest img3 t)" ]
cat >missing.yaml <<YAML
base: scratch
layers:
  - name: t
    files: [{image: "oci:tool-img:v1", from: /opt/nothing, to: /x, digest: "$(manifest_digest tool-img v1)"}]
YAML
expect_fail "a path the image lacks is refused, naming the rule" 3 \
  "missing.yaml:4:13: /opt/nothing in image oci:tool-img:v1: the image has no such path" \
  "$PI" build missing.yaml -o oci:missing --cache-dir missing-cache
rm -rf tampered-img && cp -a tool-img tampered-img
top=$(layer_digests tampered-img v1 | tail -1 | cut -d: -f2)
chmod u+w "tampered-img/blobs/sha256/$top" && printf 'x' >>"tampered-img/blobs/sha256/$top"
sed "s|oci:tool-img:v1|oci:tampered-img:v1|; s|/opt/nothing|/opt/tool|" missing.yaml >tampered.yaml
expect_fail "a layer blob that is not its digest is refused" 8 "$top" \
  "$PI" build tampered.yaml -o oci:tampered-out --cache-dir tampered-cache
check "nothing was written for a refused build" bash -c "[[ ! -e moved && ! -e missing && ! -e tampered-out ]]"

finish
