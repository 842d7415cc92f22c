#!/usr/bin/env bash
# Credentials and TLS against real registries: htpasswd basic auth, a token server the
# registry trusts, TLS with a CA made here. Every credential source (flags, login,
# docker config auths/auth, username/password, identitytoken, credHelpers, credsStore,
# $REGISTRY_AUTH_FILE, podman's auth.json), token refresh after a 401 mid-push, TLS
# refusals with their hints, bad references, and no secret in any output.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
js() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2" "$1"; }
export DOCKER_CONFIG=$WORK/docker
unset REGISTRY_AUTH_FILE XDG_RUNTIME_DIR

registry_start basic htpasswd "$WORK/reg"
registry_start tok token "$WORK/reg"
registry_start tls tls "$WORK/reg"
B=$BASIC_HOST
T=$TOK_HOST

mkdir -p src
head -c 300000 /dev/urandom >src/data.bin
cat >img.yaml <<'YAML'
image: {name: example.com/auth/img, tags: [v1]}
layers:
  - name: data
    data: [{from: src/, to: /data/}]
  - name: more
    data: [{from: src/, to: /more/}]
YAML
"$PI" build img.yaml -q -o oci:img:v1 >/dev/null

# --- basic auth -----------------------------------------------------------------
expect_fail "anonymous push to an authenticated registry (exit 5)" 5 "$B.*no credentials were found for $B" \
  "$PI" push oci:img:v1 "$B/team/img:v1" --insecure -q
check "the hint says how to log in" grep -q "paddle-image login $B" "$WORK/err.txt"
check "push with --username and --password-stdin" bash -c "printf '%s\n' '$BASIC_PASS' | '$PI' push oci:img:v1 $B/team/img:v1 --insecure -q --username alice --password-stdin"
expect_fail "a wrong password names the registry and where it came from (exit 5)" 5 \
  "$B.*credentials from --username/--password-stdin were refused" \
  bash -c "echo wrong-password | '$PI' push oci:img:v1 $B/team/img:v2 --insecure -q --username alice --password-stdin"
check "and never the password" bash -c "! grep -q wrong-password '$WORK/err.txt'"
expect_fail "login with a wrong password fails (exit 5)" 5 "refused" \
  bash -c "echo nope | '$PI' login $B --insecure --username alice --password-stdin"
check "and writes nothing" test ! -e "$DOCKER_CONFIG/config.json"
check "login stores the credentials" bash -c "printf '%s' '$BASIC_PASS' | '$PI' login $B --insecure --username alice --password-stdin | grep -q 'Login Succeeded'"
check "in the docker config, mode 0600" bash -c "test \$(stat -c %a '$DOCKER_CONFIG/config.json') = 600 && grep -q '\"$B\"' '$DOCKER_CONFIG/config.json'"
check "push then uses them" "$PI" push oci:img:v1 "$B/team/img:v3" --insecure -q
check "pull too" "$PI" pull "$B/team/img:v3" -o oci:pulled --insecure -q
check "logout removes them" bash -c "'$PI' logout $B | grep -q Removed && ! grep -q '\"$B\"' '$DOCKER_CONFIG/config.json'"
expect_fail "after logout the registry refuses again" 5 "no credentials" "$PI" push oci:img:v1 "$B/team/img:v4" --insecure -q

# Every command that talks to a registry authenticates with -u/--password-stdin alone
# (nothing stored): before, sign/attest/verify/sbom and warm manifests read the
# password and kept it for no registry.
printf '%s\n' "$BASIC_PASS" | "$PI" push oci:img:v1 "$B/team/flags:v1" --insecure -q --username alice --password-stdin
printf 'pw\n' >flags.pass
"$PI" key generate -o fk --passphrase-file flags.pass >/dev/null
echo '{"buildDefinition": {"buildType": "test"}}' >flags-pred.json
while IFS= read -r args; do
  check "${args%% *} with -u/--password-stdin alone" bash -c \
    "printf '%s\n' '$BASIC_PASS' | '$PI' $args --insecure --username alice --password-stdin >flags-out.txt 2>&1"
done <<LIST
sign $B/team/flags:v1 --key fk.key --passphrase-file flags.pass
attest $B/team/flags:v1 --key fk.key --passphrase-file flags.pass --type slsa --predicate flags-pred.json
verify $B/team/flags:v1 --key fk.pub
sbom $B/team/flags:v1 -o flags-sbom.json
inspect $B/team/flags:v1
tags $B/team/flags
pull $B/team/flags:v1 -o oci:flags-pulled -q
copy $B/team/flags:v1 $B/team/flags-copy:v1 -q
warm plan $B/team/flags:v1
warm manifests $B/team/flags:v1 --kind imagepulljob
cache ls $B/team/flags
cache prune $B/team/flags --keep $B/team/flags:v1 --dry-run
LIST
# Commands that talk to no registry list no registry flag (a flag that does nothing is a lie).
# (cache prune takes them: with a repository it prunes a registry cache.)
for c in "cache info" resolve matrix logout gc "key generate" init "warm hosts"; do
  # shellcheck disable=SC2086 # c is a command and its subcommand
  check "$c --help lists no registry flag" bash -c "! '$PI' $c --help | grep -E -- '--(username|password-stdin|insecure-registry|insecure|ca-file)\b'"
done
mkdir -p no-gpu-root
expect_fail "doctor --image with -u/--password-stdin alone reads the image (exit 10: no GPU under --root)" 10 "" \
  bash -c "printf '%s\n' '$BASIC_PASS' | '$PI' doctor --image $B/team/flags:v1 --root '$WORK/no-gpu-root' --json --insecure --username alice --password-stdin"
check "... and names it by digest" grep -q "$B/team/flags:v1@sha256:" "$WORK/out.txt"
check "no output shows the password" bash -c "! grep -rqF '$BASIC_PASS' flags-out.txt flags-sbom.json"
expect_fail "without the flags the same verify is refused (exit 5)" 5 "no credentials" "$PI" verify "$B/team/flags:v1" --key fk.pub --insecure

# Every other place credentials come from.
auth=$(printf '%s' "alice:$BASIC_PASS" | base64 -w0)
printf '{"auths":{"http://%s/v1/":{"username":"alice","password":"%s"}}}' "$B" "$BASIC_PASS" >"$DOCKER_CONFIG/config.json"
check "docker config auths with username/password (and a scheme in the key)" "$PI" push oci:img:v1 "$B/team/img:c1" --insecure -q
rm "$DOCKER_CONFIG/config.json"
printf '{"auths":{"%s":{"auth":"%s"}}}' "$B" "$auth" >regauth.json
check "\$REGISTRY_AUTH_FILE" env REGISTRY_AUTH_FILE="$WORK/regauth.json" "$PI" push oci:img:v1 "$B/team/img:c2" --insecure -q
mkdir -p xdg/containers && cp regauth.json xdg/containers/auth.json
check "podman's \$XDG_RUNTIME_DIR/containers/auth.json" env XDG_RUNTIME_DIR="$WORK/xdg" "$PI" push oci:img:v1 "$B/team/img:c3" --insecure -q
mkdir -p bin
cat >bin/docker-credential-pitest <<SH
#!/bin/sh
# A credential helper for the test: knows one registry, records stores.
read -r input
case "\$1" in
  get) [ "\$input" = "$B" ] || { echo "credentials not found in native keychain"; exit 1; }
       printf '{"ServerURL":"%s","Username":"alice","Secret":"%s"}' "$B" "$BASIC_PASS" ;;
  store) echo "\$input" >"$WORK/helper-store.json" ;;
  erase) echo "\$input" >"$WORK/helper-erase.txt" ;;
esac
SH
chmod +x bin/docker-credential-pitest
export PATH=$WORK/bin:$PATH
printf '{"credHelpers":{"%s":"pitest"}}' "$B" >"$DOCKER_CONFIG/config.json"
check "credHelpers runs docker-credential-NAME get" "$PI" push oci:img:v1 "$B/team/img:c4" --insecure -q
printf '{"credsStore":"pitest"}' >"$DOCKER_CONFIG/config.json"
check "credsStore too" "$PI" push oci:img:v1 "$B/team/img:c5" --insecure -q
check "login with a credsStore stores through the helper" bash -c "printf '%s' '$BASIC_PASS' | '$PI' login $B --insecure --username alice --password-stdin >/dev/null && grep -q '\"Username\":\"alice\"' '$WORK/helper-store.json' && ! grep -q '$BASIC_PASS' '$DOCKER_CONFIG/config.json'"
printf '{"credHelpers":{"%s":"missing-helper"}}' "$B" >"$DOCKER_CONFIG/config.json"
expect_fail "a credential helper that is not installed is named (exit 5)" 5 "docker-credential-missing-helper" \
  "$PI" push oci:img:v1 "$B/team/img:c6" --insecure -q
cat >bin/docker-credential-broken <<'SH'
#!/bin/sh
# A helper that fails (a locked keychain): not the protocol's "not found" answer.
echo "error: the keychain is locked; secret=hunter2" >&2
echo "keychain locked"
exit 3
SH
chmod +x bin/docker-credential-broken
printf '{"credHelpers":{"%s":"broken"}}' "$B" >"$DOCKER_CONFIG/config.json"
expect_fail "a credential helper that fails is named, not 'no credentials were found' (exit 5)" 5 \
  "no credentials were sent: docker-credential-broken get .* failed for $B \(exit 3\)" \
  "$PI" push oci:img:v1 "$B/team/img:c6b" --insecure -q
check "... and what it printed is not repeated" bash -c "! grep -q 'hunter2\|keychain locked' '$WORK/err.txt'"
printf '{"auths": {' >"$DOCKER_CONFIG/config.json"
expect_fail "a malformed docker config names the file (exit 3)" 3 "$DOCKER_CONFIG/config.json: not valid JSON" \
  "$PI" push oci:img:v1 "$B/team/img:c7" --insecure -q
rm -f "$DOCKER_CONFIG/config.json"

# --- token auth -------------------------------------------------------------------
expect_fail "anonymous push with token auth (exit 5)" 5 "no credentials were found for $T" \
  "$PI" push oci:img:v1 "$T/team/img:v1" --insecure -q
check "login to a token registry" bash -c "printf '%s' '$TOK_PASS' | '$PI' login $T --insecure --username bob --password-stdin >/dev/null"
check "push with a bearer token" "$PI" push oci:img:v1 "$T/team/img:v1" --insecure -q
check "cross-repository mount with a two-repository token scope" bash -c "'$PI' copy $T/team/img:v1 $T/other/img:v1 --insecure -q --json >tokcopy.json"
check "the mount happened" js tokcopy.json 'assert j["stats"]["blobs_mounted"]==3, j["stats"]'
check "the token server saw push and pull scopes" grep -q "repository:other/img:pull,push" "$TOK_TOKEN_LOG"
check "pull with the token" "$PI" pull "$T/team/img:v1" -o oci:tokpull --insecure -q
"$PI" logout "$T" >/dev/null
expect_fail "a wrong password at the token server (exit 5)" 5 "token server 127.0.0.1:[0-9]+ refused the credentials from --username/--password-stdin for $T" \
  bash -c "echo wrong | '$PI' pull $T/team/img:v1 -o oci:x --insecure -q --username bob --password-stdin"
refresh=$(curl -s -X POST "$TOK_TOKEN_URL" -d "grant_type=password&username=bob&password=$TOK_PASS&service=paddle-test-registry&access_type=offline&client_id=test" |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["refresh_token"])')
printf '{"auths":{"%s":{"identitytoken":"%s"}}}' "$T" "$refresh" >"$DOCKER_CONFIG/config.json"
check "an identitytoken is exchanged for access tokens (OAuth2 refresh grant)" "$PI" push oci:img:v1 "$T/team/img:idt" --insecure -q
rm -f "$DOCKER_CONFIG/config.json"

# A token the registry stops accepting mid-push while the client still thinks it is
# valid: the 401 brings a fresh token and the push goes on.
registry_start short token "$WORK/reg" --lifetime 60 --exp-skew 118
proxy_start sp "$SHORT_HOST" "$WORK/reg"
proxy_rules sp '{"method": "PUT", "path": "/v2/team/img/blobs/uploads/", "action": "status", "code": 503, "headers": {"Retry-After": "3"}, "skip": 1}'
check "a 401 mid-push refreshes the token" bash -c "printf '%s' '$SHORT_PASS' | '$PI' push oci:img:v1 $SP_HOST/team/img:v1 --insecure --username bob --password-stdin --jobs 1 -v --json >short.json 2>short.err"
check "Retry-After: 3 was honoured" grep -q "retrying in 3.0 s.*503" short.err
check "and the token that expired meanwhile was refreshed after its 401" grep -q "answered 401; authenticating again" short.err
check "the registry did answer 401 to the stale token" grep -qE '"(PUT|POST|PATCH|HEAD) /v2/team/img/[^"]*" 401' "$SHORT_LOG"
check "the image is complete" skopeo inspect --tls-verify=false --creds "bob:$SHORT_PASS" "docker://$SHORT_HOST/team/img:v1"

# --- TLS ----------------------------------------------------------------------------
check "TLS with --ca-file" bash -c "'$PI' push oci:img:v1 $TLS_HOST/team/img:v1 --ca-file '$TLS_CA' -q -vv 2>tls.log"
check "HTTP/2 is used where the registry offers it" bash -c "test '$TLS_HTTP_VERSION' != 2 || grep -q 'https, HTTP/2' tls.log"
mkdir -p cadir && cp "$TLS_CA" cadir/ca.crt
check "skopeo verifies it with the same CA" skopeo inspect --cert-dir cadir "docker://$TLS_HOST/team/img:v1"
expect_fail "without the CA the push is refused (exit 6)" 6 "TLS failed" "$PI" push oci:img:v1 "$TLS_HOST/team/img:v2" -q
check "and the hint says how to trust it" grep -q -- "--ca-file" "$WORK/err.txt"
expect_fail "a wrong CA is refused (exit 6)" 6 "TLS failed" "$PI" pull "$TLS_HOST/team/img:v1" -o oci:x --ca-file "$TLS_WRONG_CA" -q
expect_fail "a certificate for another host name is refused (exit 6)" 6 "TLS failed.*(subject name|host name|match)" \
  "$PI" pull "$TLS_WRONGNAME_HOST/team/img:v1" -o oci:x --ca-file "$TLS_CA" -q
check "--insecure skips verification for a test registry" "$PI" pull "$TLS_HOST/team/img:v1" -o oci:tlsin --insecure -q

# The system's CAs, found as a self-contained binary must find them on any distribution.
check "SSL_CERT_FILE naming a bundle that holds the CA: no --ca-file needed" \
  env SSL_CERT_FILE="$TLS_CA" "$PI" pull "$TLS_HOST/team/img:v1" -o oci:sslfile -q
mkdir -p hashed && cp "$TLS_CA" hashed/ca.pem && openssl rehash hashed 2>/dev/null
check "SSL_CERT_DIR naming a hashed directory that holds it" \
  env SSL_CERT_DIR="$WORK/hashed" "$PI" pull "$TLS_HOST/team/img:v1" -o oci:ssldir -q
check "--ca-file adds to the system's CAs, it does not replace them" \
  env SSL_CERT_FILE="$TLS_CA" "$PI" pull "$TLS_HOST/team/img:v1" -o oci:sslboth -q --ca-file "$TLS_WRONG_CA"
expect_fail "a TLS failure names the CAs it trusted (exit 6)" 6 "trusted: .*SSL_CERT_FILE" \
  env SSL_CERT_FILE="$TLS_WRONG_CA" "$PI" pull "$TLS_HOST/team/img:v1" -o oci:x -q --retries 0
# A RHEL-shaped /etc in a private mount namespace: no Debian bundle, no hashed
# /etc/ssl/certs, the CA only at /etc/pki/tls/certs/ca-bundle.crt.
rm -rf rhel-etc && cp -a /etc rhel-etc 2>/dev/null || true
rm -rf rhel-etc/ssl/certs rhel-etc/ssl/cert.pem && mkdir -p rhel-etc/ssl/certs rhel-etc/pki/tls/certs
cp "$TLS_CA" rhel-etc/pki/tls/certs/ca-bundle.crt
check "with the CA only where RHEL keeps it, no flag is needed" env -u SSL_CERT_FILE -u SSL_CERT_DIR \
  unshare -m bash -c "mount --bind '$WORK/rhel-etc' /etc && '$PI' pull '$TLS_HOST/team/img:v1' -o oci:rhel -q"
rm -f rhel-etc/pki/tls/certs/ca-bundle.crt
expect_fail "with no bundle anywhere the failure says so (exit 6)" 6 "no CA bundle was found on this host" \
  env -u SSL_CERT_FILE -u SSL_CERT_DIR unshare -m bash -c \
  "mount --bind '$WORK/rhel-etc' /etc && '$PI' pull '$TLS_HOST/team/img:v1' -o oci:x -q --retries 0"
# Loopback is a secure origin (decided from the literal host): https first, then plain
# HTTP, as Docker does for 127.0.0.0/8. Anything else gets plain HTTP only with the flag:
# checked in a network namespace whose lo also holds 10.200.0.1.
expect_fail "a loopback registry is reached over plain HTTP without a flag: its 401 is the answer (exit 5)" 5 \
  "no credentials were found" "$PI" push oci:img:v1 "$B/team/img:h1" -q -v
check "... after https was tried first" grep -q "using plain HTTP (a loopback host)" "$WORK/err.txt"
expect_fail "plain HTTP is never used without --insecure for a non-loopback host (exit 6)" 6 "TLS failed" \
  in_netns_with_server 10.200.0.1 18080 "$WORK/ns.log" "$PI" pull 10.200.0.1:18080/team/img:v1 -o oci:nsx -q --retries 0
check "and that hint names --insecure-registry" grep -q -- "--insecure-registry 10.200.0.1:18080" "$WORK/err.txt"
check "... and no plain-HTTP request reached the server" bash -c "! grep -q 'GET /v2/' '$WORK/ns.log'"
check "with --insecure-registry the same host is asked over plain HTTP" bash -c \
  "in_netns_with_server 10.200.0.1 18080 '$WORK/ns2.log' '$PI' pull 10.200.0.1:18080/team/img:v1 -o oci:nsy -q --retries 0 \
     --insecure-registry 10.200.0.1:18080 >/dev/null 2>&1; grep -q 'GET /v2/' '$WORK/ns2.log'"

# --- bad input ------------------------------------------------------------------------
expect_fail "an upper-case repository is refused at the bad part (exit 3)" 3 "path component 'Team'" \
  "$PI" push oci:img:v1 "$B/Team/img:v1" --insecure -q
expect_fail "a bad tag is refused (exit 3)" 3 "tag 'v1!' is not valid" "$PI" pull "$B/team/img:v1!" -o oci:x --insecure -q
expect_fail "a malformed digest is refused (exit 3)" 3 "sha256" "$PI" pull "$B/team/img@sha256:1234" -o oci:x --insecure -q
expect_fail "a push target with a digest is refused (exit 2)" 2 "takes a tag, not a digest" \
  "$PI" push oci:img:v1 "$B/team/img@sha256:$(printf '%064d' 0)" --insecure -q
expect_fail "a missing source layout (exit 3)" 3 "" "$PI" push oci:nope:v1 "$B/team/img:v1" --insecure -q
expect_fail "--username without --password-stdin (exit 2)" 2 "go together" "$PI" pull "$B/team/img:v1" -o oci:x -u alice -q
expect_fail "an unknown host (exit 6), checked in a network namespace with no network" 6 "no-such-registry.invalid.*(unknown host|resolve)" \
  unshare --net "$PI" pull no-such-registry.invalid/team/img:v1 -o oci:x -q --retries 0
expect_fail "a registry that is not running (exit 6)" 6 "127.0.0.1:1" "$PI" pull 127.0.0.1:1/team/img:v1 -o oci:x --insecure -q --retries 1

# --- secrets never appear ---------------------------------------------------------------
# Every command at its most verbose level against both authenticated registries;
# tokens are JWTs ("eyJ..."), the basic secret also appears base64-encoded.
mkdir -p leak
n=0
run() { n=$((n + 1)); "$@" >"leak/$n.out" 2>"leak/$n.err" || echo "command $n failed" >>leak-failures; }
for H in "$B:alice:$BASIC_PASS" "$T:bob:$TOK_PASS"; do
  host=${H%%:*}:$(cut -d: -f2 <<<"$H"); user=$(cut -d: -f3 <<<"$H"); pass=$(cut -d: -f4- <<<"$H")
  run bash -c "printf '%s' '$pass' | '$PI' login $host --insecure -u $user --password-stdin --log-level trace"
  run "$PI" push oci:img:v1 "$host/leak/img:v1" --insecure --log-level trace --metadata-file "leak/m$n.json" --json
  run "$PI" pull "$host/leak/img:v1" -o "oci:leak/p$n" --insecure --log-level trace --metadata-file "leak/m$n.json"
  run "$PI" copy "$host/leak/img:v1" "$host/leak/copy:v1" --insecure --log-level trace --metadata-file "leak/m$n.json" --json
  run "$PI" inspect "$host/leak/img:v1" --insecure --log-level trace --json
  run "$PI" tags "$host/leak/img" --insecure --log-level trace
  run "$PI" build img.yaml --push "$host/leak/built:v1" --insecure --log-level trace --metadata-file "leak/m$n.json" --json
  run "$PI" logout "$host"
  run bash -c "printf '%s' '$pass' | '$PI' pull $host/leak/img:v1 -o oci:leak/q$n --insecure -u $user --password-stdin -vvv"
  run bash -c "printf '%s' 'wrong-$pass' | '$PI' pull $host/leak/img:v1 -o oci:leak/r$n --insecure -u $user --password-stdin -vvv"
done
check "every traced command ran (the last one of each pair fails on purpose)" bash -c "test \$(wc -l <leak-failures) -eq 2"
check "the trace did log request headers (redacted)" grep -rq "Authorization: \[redacted\]" leak
basic64=$(printf '%s' "alice:$BASIC_PASS" | base64 -w0)
# A token is a JWT: base64url header and payload, both JSON ("eyJ..."), joined by a dot.
# (A bare 'eyJ' plus ten characters also matched distribution's upload _state HMAC by
# chance, one run in many.)
check "no password, basic credential or token in any output or metadata" bash -c "! grep -rlE -e '$BASIC_PASS' -e '$TOK_PASS' -e '$basic64' -e 'eyJ[A-Za-z0-9_-]{10,}[.]eyJ[A-Za-z0-9_-]{10,}' leak"
check "nor in the identitytoken run's output" bash -c "! grep -q '$refresh' '$WORK/check.log'"
finish
