#!/usr/bin/env bash
# Pre-warming node caches with real parts: Debian's docker-registry as upstream,
# mirror and pull-through cache (proxy mode) on 127.0.0.1, and Debian's containerd
# started here on a private socket with its root and state under the test's work dir
# (CRI plugin disabled, native snapshotter; never the machine's own containerd).
# Covers warm plan, push --to/--through, export (full, thin, pinned, docker-archive),
# oci-archive as a reference kind (build -o, copy to and from it, read by skopeo, podman load
# and ctr, with and without a tag),
# hosts (ctr pull --hosts-dir from the mirror with the upstream stopped) and verify,
# plus bad input: a mirror that is down, garbage --have, --thin without --have, a tag
# where a digest is required.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/registry/registry.sh"
source "$SUPPORT/container.sh"
export PODMAN_TMP=$WORK/podman
trap 'podman_cleanup 2>/dev/null || true; registry_stop_all' EXIT
cd "$WORK"
js() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2" "$1"; }
# The `ctr images ls` line of NAME in namespace NS (REF TYPE DIGEST SIZE PLATFORMS LABELS).
image_line() { ctr -n "$1" images ls | awk -v n="$2" '$1 == n'; }
listed() { # NS NAME DIGEST [LABEL]: NAME is listed with DIGEST (and LABEL)
  local l
  l=$(image_line "$1" "$2")
  [[ -n $l && " $l " == *" $3 "* && ( -z ${4:-} || $l == *"$4"* ) ]]
}

registry_start up open "$WORK/reg"
registry_start mir open "$WORK/reg"
REGISTRY_EXTRA_YAML=$(printf 'proxy:\n  remoteurl: %s\n' "$UP_URL") registry_start cache open "$WORK/reg"
U=$UP_HOST M=$MIR_HOST C=$CACHE_HOST
INS=(--insecure)
uploads() { registry_access_count "$1" PUT '/v2/[^ ]*/blobs/uploads/[^ ]*digest=' 201; }
blob_gets() { registry_access_count "$1" GET '/v2/[^ ]*/blobs/sha256:' '200'; }

# --- containerd on a private socket --------------------------------------------------
CTD=$WORK/ctd
export CONTAINERD_SNAPSHOTTER=native
unset CONTAINERD_NAMESPACE
# Each namespace has its own blobs (the default, "shared", would let a pull into a
# fresh namespace reuse blobs imported elsewhere without fetching them).
containerd_start "$CTD" native '[plugins."io.containerd.metadata.v1.bolt"]
  content_sharing_policy = "isolated"'
check "containerd answers on the private socket (root and state under the work dir)" ctr version
check "its CRI plugin is off and the native snapshotter on" bash -c \
  "ctr plugins ls | grep -E 'io.containerd.snapshotter.v1 +native .* ok' && ! ctr plugins ls | grep -E 'grpc.v1 +cri .* ok'"

# --- two images that share their first two layers -----------------------------------
mkdir -p stand/bin deps app
cp /bin/busybox stand/bin/busybox
ln -sf busybox stand/bin/sh
/usr/bin/python3 -c 'import random; random.seed(14); open("deps/blob.bin","wb").write(random.randbytes(3000000))'
cat >ocr.yaml <<'YAML'
layers:
  - name: base
    files: [{from: stand/, to: /}]
  - name: deps
    files: [{from: deps/, to: /opt/deps/}]
  - name: app
    files: [{from: app/, to: /app/}]
config:
  cmd: [/bin/sh, /app/run.sh]
YAML
echo 'echo ocr 1.3' >app/run.sh
"$PI" build ocr.yaml -q --push "$U/team/ocr:1.3" "${INS[@]}" --digest-file d13 >/dev/null
echo 'echo ocr 1.4' >app/run.sh
"$PI" build ocr.yaml -q --push "$U/team/ocr:1.4" "${INS[@]}" --digest-file d14 >/dev/null
D13=$(<d13) D14=$(<d14)
check "two images on the upstream registry" test -n "$D13" -a -n "$D14" -a "$D13" != "$D14"
COSIGN_PASSWORD=warm-test "$PI" key generate -o warm -q >/dev/null 2>&1 || COSIGN_PASSWORD=warm-test "$PI" key generate -o warm >/dev/null
check "1.4 is signed upstream" env COSIGN_PASSWORD=warm-test "$PI" sign "$U/team/ocr:1.4" --key warm.key "${INS[@]}"

# --- plan -----------------------------------------------------------------------------
check "plan --against --json" bash -c "'$PI' warm plan $U/team/ocr:1.4 --against $U/team/ocr:1.3 ${INS[*]} --json >plan.json"
check "two layers shared, one new, chain ids shared below it" js plan.json '
L=j["layers"]; assert [l["status"] for l in L]==["shared","shared","new"], L
assert [l["snapshot_shared"] for l in L]==[True,True,False], L'
check "chain ids are the OCI chain of the diff_ids" js plan.json '
import hashlib
L=j["layers"]; c=L[0]["diff_id"]; assert L[0]["chain_id"]==c
for l in L[1:]:
    c="sha256:"+hashlib.sha256((c+" "+l["diff_id"]).encode()).hexdigest(); assert l["chain_id"]==c, (l, c)'
check "bytes to move: the new layer, the config and the manifest" js plan.json '
assert j["bytes_to_move"]==j["layers"][2]["size"]+j["config"]["size"]+j["manifest"]["size"], j
assert j["bytes_total"]==sum(l["size"] for l in j["layers"])+j["config"]["size"]+j["manifest"]["size"]'
check "plan text: a line per layer and the total" bash -c \
  "'$PI' warm plan $U/team/ocr:1.4 --against $U/team/ocr:1.3 ${INS[*]} | grep -q '^to move: 1 of 3 layers'"
js plan.json 'print(j["layers"][0]["digest"]); print(j["layers"][1]["digest"])' >have13.txt
printf '# ctr -n k8s.io content ls -q\n\n' >>have13.txt
check "plan --have: what the node's content store holds" bash -c \
  "'$PI' warm plan $U/team/ocr:1.4 --have have13.txt ${INS[*]} --json >planh.json"
check "--have: the listed layers are shared" js planh.json \
  'assert [l["status"] for l in j["layers"]]==["shared","shared","new"], j; assert "snapshot_shared" not in j["layers"][0]'
printf '%s\nsha256:0123\n' "$(head -1 have13.txt)" >garbage.txt
expect_fail "a --have file with a garbage line (exit 3, FILE:LINE)" 3 "garbage.txt:2: 'sha256:0123' is not a digest" \
  "$PI" warm plan "$U/team/ocr:1.4" --have garbage.txt "${INS[@]}"
expect_fail "--against and --have together (exit 2)" 2 "give one" \
  "$PI" warm plan "$U/team/ocr:1.4" --have have13.txt --against "$U/team/ocr:1.3" "${INS[@]}"

# --- push --to a mirror: only what it lacks ------------------------------------------
check "push 1.3 to the mirror with its tag" "$PI" warm push "$U/team/ocr:1.3" --to "http://$M" --tag "${INS[@]}" -q
check "the mirror got every blob of 1.3 (access log: 4 uploads)" test "$(uploads "$MIR_LOG")" -eq 4
up0=$(uploads "$MIR_LOG") get0=$(blob_gets "$UP_LOG")
check "push 1.4 to the mirror" bash -c "'$PI' warm push $U/team/ocr:1.4 --to http://$M ${INS[*]} -q --json >push14.json"
# New: the app layer and the config of 1.4, and the signature's layer and config.
check "only the missing blobs moved (mirror access log: 4 uploads, 2 of them the signature's)" \
  test "$(($(uploads "$MIR_LOG") - up0))" -eq 4
check "and only they were read upstream (upstream access log)" test "$(($(blob_gets "$UP_LOG") - get0))" -eq 4
check "metadata agrees: two blobs already on the mirror" js push14.json \
  'assert j["stats"]["blobs_skipped"]==2 and j["digest"]==open("d14").read().strip() and j["attachments"]==1, j'
check "metadata counts the 4 blobs read upstream, as many as their bytes (blobs_downloaded)" js push14.json \
  's=j["stats"]; assert s["blobs_downloaded"]==4 and s["bytes_downloaded"]>0, s'
check "the manifest went by digest (mirror access log)" \
  test "$(registry_access_count "$MIR_LOG" PUT "/v2/team/ocr/manifests/$D14" 201)" -eq 1
check "no tag without --tag" bash -c "! '$PI' tags $M/team/ocr --insecure | grep -qx 1.4"
check "the signature came along (its cosign tag on the mirror)" bash -c \
  "'$PI' tags $M/team/ocr --all --insecure | grep -qx 'sha256-${D14#sha256:}.sig'"
check "it verifies on the mirror" env COSIGN_PASSWORD= "$PI" verify "$M/team/ocr@$D14" --key warm.pub --identity "$U/team/ocr" "${INS[@]}"
up1=$(uploads "$MIR_LOG")
check "push 1.4 again, now with --tag" "$PI" warm push "$U/team/ocr:1.4" --to "http://$M" --tag "${INS[@]}" -q
check "uploads nothing (mirror access log)" test "$(uploads "$MIR_LOG")" -eq "$up1"
check "and the tag is there" bash -c "'$PI' tags $M/team/ocr --insecure | grep -qx 1.4"
check "verify --registry: every blob on the mirror read and hashed" bash -c \
  "'$PI' warm verify $U/team/ocr:1.4 --registry http://$M ${INS[*]} --json >ver.json"
check "... the image's five blobs and the signature's" js ver.json \
  'assert j["passed"] and j["ok"]>=7 and j["digest"]==open("d14").read().strip(), j; assert {b["kind"] for b in j["blobs"]}=={"manifest","config","layer","attachment"}, j'
expect_fail "an image the mirror does not have (exit 12, names the manifest)" 12 "missing manifest $D14" \
  "$PI" warm verify "$U/team/elsewhere@$D14" --registry "http://$M" -q
# Port 9 (discard) has no listener; a port picked and closed here could be another
# test's by the time the push connects (the tests run side by side).
DEAD=9
expect_fail "a mirror that is down (exit 6, names the host)" 6 "127.0.0.1:$DEAD" \
  "$PI" warm push "$U/team/ocr:1.4" --to "http://127.0.0.1:$DEAD" "${INS[@]}" --retries 0 -q
expect_fail "--to a path (exit 2)" 2 "not a registry host" "$PI" warm push "$U/team/ocr:1.4" --to "$M/team" -q
expect_fail "--to and --through together (exit 2)" 2 "one of --to" \
  "$PI" warm push "$U/team/ocr:1.4" --to "$M" --through "$C" -q

# --- warm-up manifests ------------------------------------------------------------------
mkdir -p pause/bin && cp /bin/busybox pause/bin/pause
printf 'layers:\n  - name: pause\n    files: [{from: pause/, to: /}]\nconfig:\n  entrypoint: [/bin/pause, sleep, "1000000"]\n' >pause.yaml
"$PI" build pause.yaml -q --push "$U/pause:3.10" "${INS[@]}" --digest-file dpause >/dev/null
DP=$(<dpause)
GOLDEN=$ROOT/tests/golden/warm
norm() { sed -e "s|$U|REG|g" -e "s|$D14|sha256:IMAGE-1.4|g" -e "s|$D13|sha256:IMAGE-1.3|g" -e "s|$DP|sha256:PAUSE|g" "$1"; }
for k in daemonset imagepulljob imagecache; do
  check "manifests --kind $k (a tag and a digest)" "$PI" warm manifests --kind "$k" "$U/team/ocr:1.4" "$U/team/ocr@$D13" \
    --pause-image "$U/pause:3.10" --node-selector nvidia.com/gpu.present=true --toleration nvidia.com/gpu:NoSchedule \
    -n gpu-warm "${INS[@]}" -o "$k.yaml"
  check "$k: valid against the pinned Kubernetes and CRD schemas" /usr/bin/python3 "$SUPPORT/k8s_validate.py" "$k.yaml"
  check "$k: every image pinned by digest" bash -c "! grep -E '^ *(- )?(image|- )\"?$U/[^@\"]*\"?\$' '$k.yaml' && grep -q '@$D14' '$k.yaml'"
  norm "$k.yaml" >"$k.norm.yaml"
  if [[ "${UPDATE_GOLDEN:-0}" == 1 ]]; then mkdir -p "$GOLDEN" && cp "$k.norm.yaml" "$GOLDEN/$k.yaml"; fi
  check "$k matches the golden file" diff -u "$GOLDEN/$k.yaml" "$k.norm.yaml"
done
check "the tags were resolved through the registry (said on stderr)" bash -c \
  "'$PI' warm manifests --kind daemonset $U/team/ocr:1.4 --pause-image $U/pause:3.10 ${INS[*]} 2>&1 >/dev/null | grep -q 'is $D14'"
check "the DaemonSet: pause pinned, maxUnavailable 100%" bash -c \
  "grep -q 'image: \"$U/pause@$DP\"' daemonset.yaml && grep -q 'maxUnavailable: \"100%\"' daemonset.yaml"
check "ImagePullJob and ImageCache notes: no tolerations, the deadline to set" bash -c \
  "grep -q 'no tolerations' imagepulljob.yaml && grep -q 'image-pull-deadline-duration=600s' imagecache.yaml"
check "--kruise-api v1beta1 and --json" bash -c \
  "'$PI' warm manifests --kind imagepulljob $U/team/ocr@$D14 --kruise-api v1beta1 ${INS[*]} --json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); d=j[\"documents\"][0]; assert d[\"apiVersion\"]==\"apps.kruise.io/v1beta1\" and d[\"spec\"][\"pullPolicy\"][\"timeoutSeconds\"]==600, j'"
check "--command as a JSON array for images without a shell" bash -c \
  "'$PI' warm manifests --kind daemonset $U/team/ocr@$D14 --pause-image $U/pause@$DP --command '[\"/bin/busybox\", \"true\"]' ${INS[*]} 2>/dev/null | grep -A2 'command:' | grep -q '/bin/busybox'"
expect_fail "an unknown --kind (exit 2, did you mean)" 2 "did you mean 'daemonset'" \
  "$PI" warm manifests --kind daemonsets "$U/team/ocr@$D14" "${INS[@]}"
expect_fail "a tag the registry does not have (exit 7, named)" 7 "team/ocr:9.9" \
  "$PI" warm manifests --kind imagecache "$U/team/ocr:9.9" "${INS[@]}"

# --- export for ctr import -------------------------------------------------------------
check "export 1.3: a full oci-archive, pinned" bash -c \
  "'$PI' warm export $U/team/ocr:1.3 -o full13.tar --pin ${INS[*]} -q >cmds13.txt"
check "prints the exact import line and one pin line per name" bash -c "
  grep -qx 'ctr -n k8s.io images import --digests --base-name $U/team/ocr --platform linux/amd64 full13.tar' cmds13.txt &&
  grep -qx 'ctr -n k8s.io images label $U/team/ocr:1.3 io.cri-containerd.pinned=pinned' cmds13.txt &&
  grep -qx 'ctr -n k8s.io images label $U/team/ocr@$D13 io.cri-containerd.pinned=pinned' cmds13.txt"
check "the archive's index names the image for containerd and OCI" bash -c \
  "tar -xOf full13.tar index.json | /usr/bin/python3 -c 'import json,sys; m=json.load(sys.stdin)[\"manifests\"]; a=m[0][\"annotations\"]; assert a[\"io.containerd.image.name\"]==\"$U/team/ocr:1.3\" and a[\"org.opencontainers.image.ref.name\"]==\"1.3\", m'"
check "skopeo reads the archive" skopeo inspect oci-archive:full13.tar:1.3
check "... without a tag too (one index.json entry for the one image)" bash -c \
  "tar -xOf full13.tar index.json | /usr/bin/python3 -c 'import json,sys; assert len(json.load(sys.stdin)[\"manifests\"])==1' &&
   skopeo inspect --raw oci-archive:full13.tar | sha256sum | grep -q '^${D13#sha256:} '"
run_cmds() { # FILE: runs each printed command as it is
  local line
  while IFS= read -r line; do
    eval "$line" || return 1
  done <"$1"
}
check "ctr imports it and pins it (the printed commands, as printed)" run_cmds cmds13.txt
check "the image is listed by name and digest" listed k8s.io "$U/team/ocr:1.3" "$D13"
check "and under its digest name" listed k8s.io "$U/team/ocr@$D13" "$D13"
check "an export by digest (no tag): the printed line makes containerd's by-digest name" bash -c \
  "'$PI' warm export $U/team/ocr@$D13 -o dig13.tar ${INS[*]} -q | sed 's/ -n k8s.io / -n dig /' | sh >/dev/null &&
   ctr -n dig images ls -q | grep -qx '$U/team/ocr@$D13'"
check "the pin label is present" listed k8s.io "$U/team/ocr:1.3" "$D13" io.cri-containerd.pinned=pinned
"$PI" warm plan "$U/team/ocr:1.3" "${INS[@]}" --json >plan13.json
chain13=$(js plan13.json 'print(j["layers"][-1]["chain_id"])')
check "containerd unpacked it: the top layer's chain id (from warm plan) is a snapshot" bash -c \
  "ctr -n k8s.io snapshots --snapshotter native ls | grep -q '^$chain13 '"
check "verify --content-dir: containerd's content store holds every blob" \
  "$PI" warm verify "$U/team/ocr@$D13" --content-dir "$CTD/root/io.containerd.content.v1.content"
expect_fail "a tag where a digest is required (exit 2)" 2 "needs IMAGE pinned by digest" \
  "$PI" warm verify "$U/team/ocr:1.3" --content-dir "$CTD/root/io.containerd.content.v1.content"
expect_fail "1.4 is not on the node yet (exit 12, names what is missing)" 12 "missing manifest $D14" \
  "$PI" warm verify "$U/team/ocr@$D14" --content-dir "$CTD/root/io.containerd.content.v1.content"

ctr -n k8s.io content ls -q >node.txt
check "export 1.4 thin, given the node's digests" bash -c \
  "'$PI' warm export $U/team/ocr:1.4 -o thin14.tar --thin --have node.txt --pin ${INS[*]} --json >thin.json 2>thin.err"
check "two layers left out" js thin.json 'assert len(j["omitted"])==2 and j["thin"], j'
check "and it says ctr import needs them on the node" grep -q "needs them in the node's content store" thin.err
check "the archive lacks exactly those blobs" bash -c "
  for d in \$(/usr/bin/python3 -c 'import json; [print(x) for x in json.load(open(\"thin.json\"))[\"omitted\"]]'); do
    ! tar -tf thin14.tar | grep -q \"\${d#sha256:}\" || exit 1; done"
check "thin is smaller than full" bash -c \
  "'$PI' warm export $U/team/ocr:1.4 -o full14.tar ${INS[*]} -q >/dev/null && test \$(stat -c %s thin14.tar) -lt \$(stat -c %s full14.tar)"
expect_fail "ctr import of the thin archive fails where the shared blobs are missing (another namespace)" 1 "" \
  ctr -n bare images import --platform linux/amd64 thin14.tar
/usr/bin/python3 -c 'import json; [print(c) for c in json.load(open("thin.json"))["commands"]]' >cmds14.txt
check "ctr imports the thin archive where the shared blobs are (the printed commands)" run_cmds cmds14.txt
check "1.4 is listed by name and digest, pinned" listed k8s.io "$U/team/ocr:1.4" "$D14" io.cri-containerd.pinned=pinned
check "and now every blob of 1.4 is on the node" \
  "$PI" warm verify "$U/team/ocr@$D14" --content-dir "$CTD/root/io.containerd.content.v1.content"
expect_fail "--thin without --have (exit 2)" 2 "--thin needs --have" \
  "$PI" warm export "$U/team/ocr:1.4" -o x.tar --thin "${INS[@]}"
expect_fail "--thin with a docker-archive (exit 2)" 2 "oci-archive only" \
  "$PI" warm export "$U/team/ocr:1.4" -o x.tar --thin --have node.txt --format docker-archive "${INS[@]}"
expect_fail "--thin with a garbage --have (exit 3)" 3 "garbage.txt:2" \
  "$PI" warm export "$U/team/ocr:1.4" -o x.tar --thin --have garbage.txt "${INS[@]}"
"$PI" pull "$U/team/ocr:1.4" -o oci:local14 "${INS[@]}" -q >/dev/null
expect_fail "an oci: layout without --name (exit 2)" 2 "pass --name" "$PI" warm export oci:local14:1.4 -o x.tar
check "nothing was written by the refused exports" test ! -e x.tar
check "an oci: layout exported under --name gives the same archive as the registry image" bash -c \
  "'$PI' warm export oci:local14:1.4 --name $U/team/ocr:1.4 -o fromlayout.tar -q >/dev/null && cmp fromlayout.tar full14.tar"
check "export a docker-archive" bash -c \
  "'$PI' warm export $U/team/ocr:1.3 -o dock13.tar --format docker-archive ${INS[*]} -q 2>dock.err >dock.txt && grep -q 'another digest' dock.err"
check "ctr imports the docker-archive under its name" bash -c \
  "ctr -n dock images import --platform linux/amd64 dock13.tar && ctr -n dock images ls -q | grep -qx '$U/team/ocr:1.3'"

# --- oci-archive: a reference kind like any other (build -o, copy to and from it) ------
{ printf 'image: {name: %s/team/built, tags: [1.3]}\n' "$U"; cat ocr.yaml; } >built.yaml
check "build -o oci-archive:FILE writes the archive, named per tag" bash -c \
  "'$PI' build built.yaml -o oci-archive:built13.tar -o oci:built13 --digest-file dbuilt >built.txt 2>built.err &&
   grep -qx \"oci-archive:built13.tar:1.3@\$(cat dbuilt)\" built.txt && grep -qx \"oci:built13:1.3@\$(cat dbuilt)\" built.txt"
DB=$(cat dbuilt 2>/dev/null)
check "skopeo reads it by its tag" bash -c \
  "skopeo inspect --raw oci-archive:built13.tar:1.3 | sha256sum | grep -q '^${DB#sha256:} '"
check "skopeo reads it without a tag" bash -c \
  "skopeo inspect --raw oci-archive:built13.tar | sha256sum | grep -q '^${DB#sha256:} '"
podman_reads() { # ARCHIVE DIGEST: podman load names one image, and it is DIGEST
  local name
  name=$(podman_load "$1" | head -1) && [[ -n $name ]] &&
    podman_isolated image inspect --format '{{.Digest}}' "$name" | grep -qx "$2"
}
check "podman load reads it (it takes no tag) as the built image" podman_reads built13.tar "$DB"
check "ctr imports it under the spec's name and by digest (--digests --base-name)" bash -c \
  "ctr -n built images import --digests --base-name $U/team/built --platform linux/amd64 built13.tar >/dev/null"
check "... listed by name with the built digest" listed built "$U/team/built:1.3" "$DB"
check "... and by digest" listed built "$U/team/built@$DB" "$DB"
check "copy reads it back (by tag and as the only image), every blob hashed on the way" bash -c \
  "'$PI' copy oci-archive:built13.tar:1.3 oci:back13 -q >/dev/null && '$PI' copy oci-archive:built13.tar oci:back13b -q >back.txt &&
   grep -qx \"oci:back13b:1.3@$DB\" back.txt && '$PI' inspect oci:back13:1.3 --json | grep -q '$DB'"
check "copy writes one from a layout, --name giving containerd's name" bash -c \
  "'$PI' copy oci:built13:1.3 oci-archive:copied13.tar --name $U/team/copied -q >copied.txt &&
   grep -qx \"oci-archive:copied13.tar:1.3@$DB\" copied.txt &&
   ctr -n copied images import --platform linux/amd64 copied13.tar >/dev/null &&
   ctr -n copied images ls -q | grep -qx '$U/team/copied:1.3'"
check "the same image gives the same archive from build, copy and warm export" bash -c \
  "'$PI' warm export oci:built13:1.3 --name $U/team/built:1.3 -o exported13.tar -q >/dev/null &&
   cmp exported13.tar built13.tar"
expect_fail "build --sign with an oci-archive as the only output (exit 2)" 2 "an oci-archive cannot carry signatures" \
  "$PI" build built.yaml -o oci-archive:signed.tar --sign --key none.key
expect_fail "an oci-archive's missing tag names the tags there (exit 3)" 3 "tags present: 1.3" \
  "$PI" copy oci-archive:built13.tar:9.9 oci:nothing
check "nothing was written by the refused commands" bash -c "test ! -e signed.tar && test ! -e nothing"

# --- push --through a pull-through cache ----------------------------------------------
cg0=$(blob_gets "$CACHE_LOG")
check "push --through reads the image and its signature through the cache" bash -c \
  "'$PI' warm push $U/team/ocr:1.4 --through http://$C ${INS[*]} -q --json >through.json"
check "every blob read whole, digest checked" js through.json '
assert j["digest"]==open("d14").read().strip(), j
assert len(j["blobs"])==6 and all(b["read"]==b["size"] for b in j["blobs"]), j["blobs"]
assert j["attachments"]==1, j'
check "the cache served each blob once (its access log)" test "$(($(blob_gets "$CACHE_LOG") - cg0))" -eq 6
expect_fail "--tag with --through (exit 2)" 2 "pull-through cache takes no pushes" \
  "$PI" warm push "$U/team/ocr:1.4" --through "http://$C" --tag -q

# --- hosts.toml, and pulls while the upstream is down ------------------------------------
check "hosts: DIR/<upstream>/hosts.toml" bash -c \
  "'$PI' warm hosts --upstream http://$U --mirror http://$M --capabilities pull,resolve -o certs.d >hosts.txt"
H="certs.d/$U/hosts.toml"
check "the mirror with its capabilities, the upstream as server, no TLS settings" bash -c "
  grep -qx 'server = \"http://$U\"' '$H' && grep -qxF '[host.\"http://$M\"]' '$H' &&
  grep -qxF '  capabilities = [\"pull\", \"resolve\"]' '$H' && ! grep -q skip_verify '$H'"
check "prints the config_path snippet for config versions 2 and 3" bash -c "
  grep -qF '[plugins.\"io.containerd.grpc.v1.cri\".registry]' hosts.txt &&
  grep -qF '[plugins.\"io.containerd.cri.v1.images\".registry]' hosts.txt &&
  grep -qF 'config_path = \"/etc/containerd/certs.d\"' hosts.txt"
check "hosts for pulls by digest: capabilities pull" "$PI" warm hosts --upstream "http://$U" --mirror "http://$M" \
  --capabilities pull -o certs-digest
check "hosts --json" bash -c "'$PI' warm hosts --upstream http://$U --mirror http://$M -o certs-json --json | grep -q '\"hosts_toml\"'"
expect_fail "hosts: an unknown capability (exit 2)" 2 "did you mean 'pull'" \
  "$PI" warm hosts --upstream "http://$U" --mirror "http://$M" --capabilities pul -o certs-bad

registry_stop up
check "the upstream is down" bash -c "! curl -s --max-time 2 http://$U/v2/"
expect_fail "without hosts.toml, ctr cannot pull" 1 "" ctr -n pulled images pull --plain-http "$U/team/ocr:1.4"
check "ctr pull --hosts-dir by tag comes from the mirror" ctr -n pulled images pull --hosts-dir certs.d "$U/team/ocr:1.4"
NS="[?]ns=127[.]0[.]0[.]1%3A${U#*:}"
check "containerd resolved the tag on the mirror at the same repository path (?ns=upstream, access log)" \
  test "$(registry_access_count "$MIR_LOG" HEAD "/v2/team/ocr/manifests/1[.]4$NS" 200)" -gt 0
check "and fetched the config and the three layers from it" \
  test "$(registry_access_count "$MIR_LOG" GET "/v2/team/ocr/blobs/sha256:[0-9a-f]+$NS" 200)" -eq 4
check "the pulled image has the pushed digest" listed pulled "$U/team/ocr:1.4" "$D14"
check "ctr pull --hosts-dir by digest with capabilities pull only" \
  ctr -n pulled2 images pull --hosts-dir certs-digest "$U/team/ocr@$D13"
check "the pull-through cache serves 1.4 with the upstream down" \
  "$PI" pull "$C/team/ocr@$D14" -o oci:viacache "${INS[@]}" -q
check "... every blob intact" blobs_intact viacache
app13=$(js plan13.json 'print(j["layers"][2]["digest"])')
check "a blob never read through the cache is not in it (1.3's app layer)" bash -c \
  "test \$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://$C/v2/team/ocr/blobs/$app13) != 200"
check "warm verify through the cache by digest (upstream down)" \
  "$PI" warm verify "$U/team/ocr@$D14" --registry "http://$C" "${INS[@]}" -q

# --- a mirror that lost or garbled a blob ------------------------------------------------
new_layer=$(js plan.json 'print(j["layers"][2]["digest"])')
data="$MIR_STORAGE/docker/registry/v2/blobs/sha256/${new_layer:7:2}/${new_layer#sha256:}/data"
check "the mirror stores the new layer" test -f "$data"
cp "$data" layer.bak
/usr/bin/python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=0xff; open(p,"wb").write(b)' "$data"
expect_fail "a corrupt blob on the mirror (exit 8, named)" 8 "corrupt layer $new_layer" \
  "$PI" warm verify "$U/team/ocr@$D14" --registry "http://$M" -q
rm -f "$data"
expect_fail "a missing blob on the mirror (exit 12, named)" 12 "missing layer $new_layer" \
  "$PI" warm verify "$U/team/ocr@$D14" --registry "http://$M" -q
check "--json: the report and the error object" bash -c \
  "'$PI' warm verify $U/team/ocr@$D14 --registry http://$M -q --json >badver.json; test \$? -eq 12 && /usr/bin/python3 -c 'import json; j=json.load(open(\"badver.json\")); assert j[\"missing\"]==1 and j[\"error\"][\"exit_code\"]==12, j'"
registry_start up open "$WORK/reg" # the upstream again, on its old storage
U2=$UP_HOST
check "warm push --to repairs the mirror: the manifest is there, the lost blob is uploaded" bash -c \
  "'$PI' warm push $U2/team/ocr:1.4 --to http://$M ${INS[*]} -q --json >repair.json && /usr/bin/python3 -c 'import json; j=json.load(open(\"repair.json\")); s=j[\"stats\"]; assert s[\"blobs_uploaded\"]==1, s' "
check "... and warm verify passes again" "$PI" warm verify "$U/team/ocr@$D14" --registry "http://$M" -q
cp layer.bak "$data"
check "restored, it verifies again" "$PI" warm verify "$U/team/ocr@$D14" --registry "http://$M" -q

finish
