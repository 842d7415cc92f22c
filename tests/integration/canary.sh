#!/usr/bin/env bash
# One canary secret through every credentialed path, then a search for it everywhere.
# The canary is the htpasswd registry's password, and also: the package index's
# password (in a spec's index URL, a requirements file's --extra-index-url,
# PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, a netrc file, a Dockerfile for init), the cosign
# passphrase (COSIGN_PASSWORD and --passphrase-file), and the query of a presigned
# URL a registry redirects blob downloads to (307, as S3- or GCS-backed registries
# do). Every command runs at trace level. Then tests/support/canary_scan.py reads
# every output, every file the commands wrote (lock files, metadata, rendered files,
# layouts, archives, the cache) and every blob of every image (decompressed, tar
# members opened): the canary, URL-encoded or base64 with its user, is nowhere. Only
# the secret inputs themselves (the netrc, the passphrase file, the docker config
# `login` writes, as docker does), the inputs that carry it on purpose (the spec with
# the index URL, the requirements file, the Dockerfile) and the servers' own state
# are skipped.
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
cd "$WORK"
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL REGISTRY_AUTH_FILE XDG_RUNTIME_DIR
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export PIP_CONFIG_FILE=/dev/null
export DOCKER_CONFIG=$WORK/secrets/docker
mkdir -p secrets/docker out

INDEX_PID=
cleanup() {
  if [[ -n $INDEX_PID ]]; then kill "$INDEX_PID" 2>/dev/null || true; fi
  registry_stop_all
}
trap cleanup EXIT

registry_start reg htpasswd "$WORK/srv"
registry_start open open "$WORK/srv"
CANARY=$REG_PASS
R=$REG_HOST
printf 'machine 127.0.0.1\nlogin user\npassword %s\n' "$CANARY" >secrets/netrc
printf '%s\n' "$CANARY" >secrets/pass

# ---- the index, with Basic auth user:CANARY -----------------------------------------
python3 "$SUPPORT/make-index-wheels.py" "$WORK/wheels" --big-mb 1 >/dev/null
mkdir -p served && cp "$WORK"/wheels/alpha-1.1-py3-none-any.whl "$WORK"/wheels/beta-2.0-py3-none-any.whl served/
python3 "$SUPPORT/index_server.py" --root served --port-file index.port --log srv/index.log --auth "user:$CANARY" \
  2>srv/index.stderr &
INDEX_PID=$!
for ((i = 0; i < 300; i++)); do [[ -s index.port ]] && break; sleep 0.1; done
IPORT=$(cat index.port)
IDX="http://user:$CANARY@127.0.0.1:$IPORT/simple"
INS=(--insecure-registry "127.0.0.1:$IPORT")

# run TAG CMD...: output to out/TAG.{out,err}; the command must succeed.
run() {
  local tag=$1
  shift
  if "$@" >"out/$tag.out" 2>"out/$tag.err"; then
    pass "$tag"
  else
    fail "$tag (exit $?): $(tail -3 "out/$tag.err")"
  fi
}
T=(--log-level trace)

# ---- Python: spec URL, requirements' --extra-index-url, PIP_*, netrc ---------------
mkdir -p app && echo 'print("hi")' >app/main.py
printf 'alpha==1.1\n' >req.txt
printf -- '--extra-index-url %s\nalpha==1.1\nbeta==2.0\n' "$IDX" >req-extra.txt
spec() { # FILE LOCK [INDEX]
  {
    printf 'image: {name: example.com/canary/app, tags: [v1]}\nbase: scratch\n'
    printf 'python: {version: "3.11", glibc: "2.36"}\nlayers:\n'
    printf '  - name: deps\n    wheels:\n      lock: %s\n' "$2"
    [[ -z ${3:-} ]] || printf '      index: %s\n' "$3"
    printf '  - name: app\n    files: [{from: app/, to: /app/}]\n'
  } >"$1"
}
spec url.yaml url.lock "$IDX"
spec plain.yaml env.lock
run lock-url "$PI" lock req.txt -o url.lock --spec url.yaml "${INS[@]}" "${T[@]}" --json
run lock-extra "$PI" lock req-extra.txt -o extra.lock --spec url.yaml "${INS[@]}" "${T[@]}"
run lock-pip-index-url env PIP_INDEX_URL="$IDX" "$PI" lock req.txt -o env.lock --spec plain.yaml "${INS[@]}" "${T[@]}"
run lock-pip-extra env PIP_INDEX_URL="http://127.0.0.1:$IPORT/simple" PIP_EXTRA_INDEX_URL="$IDX" \
  NETRC=/dev/null "$PI" lock req.txt -o env2.lock --spec plain.yaml "${INS[@]}" "${T[@]}"
run lock-netrc env NETRC="$WORK/secrets/netrc" "$PI" lock req.txt -o netrc.lock --spec plain.yaml \
  -i "http://127.0.0.1:$IPORT/simple" "${INS[@]}" "${T[@]}"
run build-url "$PI" build url.yaml -o oci:built-url:v1 "${INS[@]}" "${T[@]}" --metadata-file built-url.json --json
run build-netrc env NETRC="$WORK/secrets/netrc" PIP_INDEX_URL="http://127.0.0.1:$IPORT/simple" \
  "$PI" build plain.yaml -o oci:built-netrc:v1 "${INS[@]}" "${T[@]}" --metadata-file built-netrc.json
run render-dockerfile "$PI" render dockerfile url.yaml -o Dockerfile.rendered
run render-gha "$PI" render github-actions url.yaml --image "$R/canary/app" --requirements req.txt -o gha.yml
run render-gitlab "$PI" render gitlab-ci url.yaml --image "$R/canary/app" --requirements req.txt -o gitlab.yml
cat >Dockerfile.in <<DOCKER
FROM paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6
COPY requirements.txt /tmp/
RUN pip install --index-url $IDX --extra-index-url $IDX -r /tmp/requirements.txt
ENV PIP_INDEX_URL=$IDX
COPY app/ /app/
DOCKER
printf 'alpha==1.1\n' >requirements.txt
run init-from-dockerfile "$PI" init --from-dockerfile Dockerfile.in initdir --json

# ---- registry credentials: login, and -u/--password-stdin on every command ---------
run push-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' push oci:built-url:v1 $R/canary/app:v1 --insecure -u alice --password-stdin ${T[*]} --json"
export COSIGN_PASSWORD=$CANARY
run key-generate "$PI" key generate -o secrets/ck
run sign-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' sign $R/canary/app:v1 --key secrets/ck.key --insecure -u alice --password-stdin ${T[*]}"
echo '{"buildDefinition": {"buildType": "canary"}}' >pred.json
run attest-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' attest $R/canary/app:v1 --key secrets/ck.key --passphrase-file secrets/pass --type slsa --predicate pred.json --insecure -u alice --password-stdin ${T[*]}"
run verify-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' verify $R/canary/app:v1 --key secrets/ck.pub --insecure -u alice --password-stdin ${T[*]} --json"
run sbom-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' sbom $R/canary/app:v1 -o sbom.json --insecure -u alice --password-stdin ${T[*]}"
run inspect-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' inspect $R/canary/app:v1 --insecure -u alice --password-stdin ${T[*]} --json"
run tags-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' tags $R/canary/app --insecure -u alice --password-stdin ${T[*]}"
run pull-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' pull $R/canary/app:v1 -o oci:pulled:v1 --insecure -u alice --password-stdin ${T[*]} --metadata-file pulled.json"
run copy-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' copy $R/canary/app:v1 $R/canary/copy:v1 --insecure -u alice --password-stdin ${T[*]}"
run warm-plan-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' warm plan $R/canary/app:v1 --insecure -u alice --password-stdin ${T[*]} --json"
run warm-manifests-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' warm manifests $R/canary/app:v1 --kind daemonset --pause-image $R/canary/app:v1 --insecure -u alice --password-stdin ${T[*]} -o warm.yaml"
run warm-export-flags bash -c "printf '%s\\n' '$CANARY' | '$PI' warm export $R/canary/app:v1 -o exported.tar --insecure -u alice --password-stdin ${T[*]}"
run login bash -c "printf '%s\\n' '$CANARY' | '$PI' login $R --insecure -u alice --password-stdin ${T[*]}"
run build-push-sign "$PI" build url.yaml --push "$R/canary/signed:v1" --sign --key secrets/ck.key --insecure "${INS[@]}" "${T[@]}" --json
run verify-login "$PI" verify "$R/canary/signed:v1" --key secrets/ck.pub --insecure "${T[@]}"
run warm-push-login "$PI" warm push "$R/canary/signed:v1" --to "http://$OPEN_HOST" --insecure "${T[@]}" --json

# ---- a registry that redirects blob GETs to a presigned URL carrying the canary ----
"$PI" push oci:built-url:v1 "$OPEN_HOST/canary/app:v1" --insecure -q
proxy_start fp "$OPEN_HOST" "$WORK/srv"
LAYER=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["layers"][0]["digest"])' \
  "built-url/blobs/sha256/$(python3 -c 'import json; print(json.load(open("built-url/index.json"))["manifests"][0]["digest"][7:])')")
SIGNED="$OPEN_URL/v2/canary/app/blobs/$LAYER?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F$CANARY&X-Amz-Signature=$CANARY&sig=$CANARY&token=$CANARY&Signature=$CANARY"
proxy_rules fp "{\"method\": \"GET\", \"path\": \"/blobs/$LAYER\$\", \"action\": \"status\", \"code\": 307, \"headers\": {\"Location\": \"$SIGNED\"}, \"times\": -1}"
run pull-redirect "$PI" pull "$FP_HOST/canary/app:v1" -o oci:redirected:v1 --insecure "${T[@]}" --json --metadata-file redirected.json
run warm-export-redirect "$PI" warm export "$FP_HOST/canary/app:v1" -o redirected.tar --insecure "${T[@]}"
check "the blob GETs were redirected (proxy log: 307)" grep -q "GET /v2/canary/app/blobs/$LAYER .*status=307" "$FP_PLOG"

# ---- render dockerfile: the index credentials go in as a BuildKit secret (netrc) ------
# podman build (isolated storage) of the rendered Dockerfile on a Debian base with pip,
# pulling the locked wheel from the authenticated index with --secret id=netrc; the
# built image is scanned below with everything else.
if [[ $(id -u) -eq 0 ]] && command -v podman >/dev/null && [[ -d $BASE_ROOTFS ]]; then
  source "$SUPPORT/container.sh"
  export PODMAN_TMP=$WORK/podman
  mkdir -p pipwheel && cp /usr/share/python-wheels/pip-*.whl pipwheel/
  cat >pybase.yaml <<YAML
image: {name: example.com/canary/pybase}
base: scratch
python: {version: "3.11", glibc: "2.36"}
layers:
  - name: rootfs
    files:
      - {from: $BASE_ROOTFS, to: /, allow_absolute_symlinks: true, allow_outside: true}
  - name: pip
    wheels: pipwheel/
config:
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
YAML
  run pybase "$PI" build pybase.yaml --push "$OPEN_HOST/canary/pybase:v1" --insecure -q
  cat >netrc-spec.yaml <<YAML
image: {name: example.com/canary/viadocker}
base: $OPEN_HOST/canary/pybase:v1
layers:
  - name: deps
    wheels: {lock: url.lock, index: "$IDX"}
YAML
  run render-netrc "$PI" render dockerfile netrc-spec.yaml -o Dockerfile.netrc
  check "the rendered RUN mounts the netrc secret" grep -q -- '--mount=type=secret,id=netrc,target=/root/.netrc' Dockerfile.netrc
  run podman-build-netrc podman_isolated build --isolation chroot --network host --tls-verify=false \
    --secret "id=netrc,src=$WORK/secrets/netrc" -f Dockerfile.netrc -t localhost/canary/viadocker:1 .
  run podman-push-netrc podman_isolated push -q localhost/canary/viadocker:1 "oci:$WORK/viadocker:v1"
  check "podman's build installed the wheel from the authenticated index" grep -q 'alpha' out/podman-build-netrc.out
  podman_cleanup
else
  echo "skip - podman build of the rendered Dockerfile with the netrc secret (needs root, podman, the Debian base)"
fi

# ---- the paths were really taken -----------------------------------------------------
check "the index saw authenticated requests" grep -q ' 200 ' srv/index.log
check "the layout holds the pulled layer (via the presigned URL)" test -f "redirected/blobs/sha256/${LAYER#sha256:}"

# ---- the search ------------------------------------------------------------------------
b64() { printf '%s' "$1" | base64 -w0; }
# Control: the scanner finds the canary inside a gzip'd tar, and base64 with its user.
mkdir -p control && printf 'x%sx' "$CANARY" >control/f && tar -cf control/t.tar -C control f
gzip -c control/t.tar >control/t.tgz && rm control/f control/t.tar && b64 "alice:$CANARY" >control/b
check "control: the scan finds the canary in a gzip'd tar member" \
  bash -c "/usr/bin/python3 '$SUPPORT/canary_scan.py' '$CANARY' control | grep -q 't.tgz(decompressed)!f'"
check "control: ... and its base64 form" \
  bash -c "/usr/bin/python3 '$SUPPORT/canary_scan.py' '$CANARY' --also '$(b64 "alice:$CANARY")' control | grep -q 'control/b'"
rm -rf control
check "the canary is in no output, no file written and no image blob" /usr/bin/python3 "$SUPPORT/canary_scan.py" "$CANARY" \
  --also "$(b64 "alice:$CANARY")" --also "$(b64 "user:$CANARY")" \
  --exclude secrets --exclude srv --exclude served --exclude wheels \
  --exclude url.yaml --exclude netrc-spec.yaml --exclude req-extra.txt --exclude Dockerfile.in "$WORK"
cp "$WORK/check.log" scan.log
check "... and the scan did read the images and archives" grep -q '^clean: [0-9]' scan.log
finish
