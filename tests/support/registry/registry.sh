# shellcheck shell=bash
# Local OCI registries for integration tests (sourced, works under set -euo pipefail).
#
# Everything listens on 127.0.0.1 only.  Uses Debian's docker-registry
# (distribution 2.8), htpasswd, openssl, curl and /usr/bin/python3 (the system
# Python, which has python3-cryptography; a pyenv `python3` on PATH does not).
#
#   registry_start NAME MODE DIR [TOKEN_SERVER_ARGS...]
#       MODE: open | htpasswd | token | tls.  Files go to DIR/NAME/.
#       Exports, with P = NAME upper-cased:
#         P_HOST=127.0.0.1:PORT   P_URL=http(s)://P_HOST   P_PID   P_DIR=DIR/NAME
#         P_LOG=DIR/NAME/registry.log (logrus lines + access log)
#         P_STORAGE=DIR/NAME/storage  P_CONFIG=DIR/NAME/config.yml
#       htpasswd: P_USER=alice P_PASS=<random>   (bcrypt htpasswd file)
#       token:    P_USER=bob P_PASS=<random> P_TOKEN_HOST P_TOKEN_URL (realm)
#                 P_TOKEN_LOG P_TOKEN_PID P_TOKEN_USERS (user:password file;
#                 lines may be added while running) P_TOKEN_CERT (signing cert)
#                 TOKEN_SERVER_ARGS go to token_server.py, e.g.
#                 `--lifetime 2 --exp-skew 60` (distribution 2.8 accepts a
#                 token for 60 s past its exp claim, --exp-skew cancels that),
#                 `--anonymous-pull`.
#       tls:      P_CA (CA cert the server cert chains to), P_WRONG_CA (an
#                 unrelated CA), P_WRONGNAME_HOST (second registry whose cert,
#                 signed by P_CA, names only DNS:wrong.example), P_WRONGNAME_LOG,
#                 P_WRONGNAME_PID, P_HTTP_VERSION (what `curl --http2` got: "2"
#                 means HTTP/2 via ALPN).  P_URL is https://127.0.0.1:PORT.
#       Optional environment, read at each call:
#         REGISTRY_EXTRA_YAML  appended verbatim to config.yml: only top-level
#                              keys the generated config lacks (it has version,
#                              log, storage, http and for auth modes auth), e.g.
#                              "validation:", "compatibility:", "notifications:".
#         REGISTRY_OVERRIDES   space-separated KEY=VALUE environment overrides
#                              that distribution applies on top of the file, e.g.
#                              "REGISTRY_STORAGE_MAINTENANCE_READONLY={\"enabled\":true}".
#       No other REGISTRY_* variable of the caller reaches the registry
#       (distribution would read them as overrides).
#
#   registry_stop NAME          stop the processes registry_start NAME started
#   registry_stop_all           stop everything started here (EXIT-trap safe, idempotent)
#
#   registry_access_count LOGFILE METHOD PATH_REGEX [STATUS_REGEX]
#       Prints how many access-log lines in LOGFILE have METHOD, a request
#       target (path plus query) matching the ERE PATH_REGEX from its start,
#       and a status matching STATUS_REGEX (whole; default any).  Example, blob
#       uploads completed: registry_access_count "$OPEN_LOG" PUT '/v2/.*/blobs/uploads/' 201
#
#   proxy_start NAME UPSTREAM_HOSTPORT DIR
#       fault_proxy.py in front of UPSTREAM (plain HTTP).  Exports P_HOST,
#       P_URL, P_RULES (rules file, empty at first), P_PLOG (proxy log), P_PID.
#   proxy_rules NAME 'JSON LINES'
#       Replaces the rules (see fault_proxy.py for the format).  Every call
#       resets the proxy's hit counters, even with the same rules.
#
# Access log format (distribution 2.8 wraps its handler in gorilla's
# CombinedLoggingHandler, writing to stdout; logrus lines go to stderr; both
# land in P_LOG, one line each).  Apache combined log format:
#   127.0.0.1 - - [21/Nov/2026:23:35:07 +0000] "PUT /v2/t/a/blobs/uploads/<uuid>?_state=...&digest=sha256:... HTTP/1.1" 201 0 "" "curl/7.88.1"
#   127.0.0.1 - - [21/Nov/2026:23:35:07 +0000] "PUT /v2/t/a/manifests/v1 HTTP/1.1" 201 0 "" "curl/7.88.1"
# Fields by whitespace: 1 client address, 2-3 "- -" (never the user name),
# 4-5 [time zone], 6 "METHOD, 7 request target with query, 8 PROTO" (HTTP/1.1
# or HTTP/2.0), 9 status, 10 response body bytes, then "referer" "user agent".
# A request whose client hung up mid-body (e.g. a PATCH cut by the fault
# proxy) is logged with status 500 (logrus: "client disconnected during blob
# PATCH" ... copied=N, then "response completed with error").  The logrus counterpart of
# each request is a `level=info msg="response completed" ...` line (level=error
# "response completed with error" for 4xx/5xx) with http.request.* fields.

if [[ -n ${_PADDLE_REGISTRY_SH:-} ]]; then
  return 0
fi
_PADDLE_REGISTRY_SH=1

_REG_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_REG_PY=/usr/bin/python3
declare -ga _REG_PIDS=()      # every process started, in order
declare -gA _REG_NAME_PIDS=() # NAME -> its pids (space separated)
_REG_RULES_GEN=0

_reg_err() { echo "registry.sh: $*" >&2; }

_reg_prefix() { # NAME -> upper-cased variable prefix
  if [[ ! $1 =~ ^[A-Za-z][A-Za-z0-9_]*$ ]]; then
    _reg_err "bad name '$1' (letters, digits, _ only)"
    return 1
  fi
  printf '%s' "${1^^}"
}

_reg_free_port() {
  "$_REG_PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

_reg_random() { openssl rand -hex 12; }

# _reg_spawn NAME LOG CMD...: start CMD in the background, output to LOG.
# Sets _REG_LAST_PID.  A watchdog kills the process should this shell die
# without running its EXIT trap (SIGKILL, ctest timeout).
_reg_spawn() {
  local name=$1 log=$2
  shift 2
  "$@" </dev/null >>"$log" 2>&1 &
  _REG_LAST_PID=$!
  disown "$_REG_LAST_PID" 2>/dev/null || true
  local owner=$$ pid=$_REG_LAST_PID
  (
    while kill -0 "$owner" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 1; done
    kill "$pid" 2>/dev/null
  ) </dev/null >/dev/null 2>&1 &
  disown $! 2>/dev/null || true
  _REG_PIDS+=("$pid" "$!")
  _REG_NAME_PIDS[$name]="${_REG_NAME_PIDS[$name]:-} $pid $!"
}

_reg_kill() { # PID...: TERM, wait up to 5 s, then KILL
  local pid i
  for pid in "$@"; do kill "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  done
}

registry_stop_all() {
  local pids=("${_REG_PIDS[@]}")
  _REG_PIDS=()
  _REG_NAME_PIDS=()
  if ((${#pids[@]})); then _reg_kill "${pids[@]}"; fi
  return 0
}

registry_stop() { # NAME
  local pids
  read -r -a pids <<<"${_REG_NAME_PIDS[$1]:-}"
  unset "_REG_NAME_PIDS[$1]"
  if ((${#pids[@]})); then _reg_kill "${pids[@]}"; fi
  return 0
}

_reg_wait_file() { # FILE PID WHAT: wait up to 10 s for FILE while PID lives
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s $1 ]] && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  [[ -s $1 ]] && return 0
  _reg_err "$3 did not start"
  return 1
}

_reg_log_tail() { # LOG
  {
    echo "---- last lines of $1 ----"
    tail -n 30 "$1" 2>/dev/null || true
    echo "----"
  } >&2
}

# _reg_make_ca DIR NAME: a self-signed CA, DIR/NAME.key + DIR/NAME.crt.
_reg_make_ca() {
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$1/$2.key" -out "$1/$2.crt" -days 3650 -subj "/CN=paddle test $2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" >/dev/null 2>&1
}

# _reg_make_cert DIR NAME CA SAN: a server cert DIR/NAME.{key,crt} signed by
# DIR/CA, with subjectAltName SAN (e.g. "IP:127.0.0.1,DNS:localhost").
_reg_make_cert() {
  local d=$1 n=$2 ca=$3 san=$4
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$d/$n.key" -out "$d/$n.csr" -subj "/CN=paddle test $n" >/dev/null 2>&1
  printf '%s\n' "subjectAltName=$san" "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >"$d/$n.ext"
  openssl x509 -req -in "$d/$n.csr" -CA "$d/$ca.crt" -CAkey "$d/$ca.key" \
    -CAcreateserial -days 825 -sha256 -extfile "$d/$n.ext" -out "$d/$n.crt" >/dev/null 2>&1
}

# _reg_launch NAME BASE AUTH_YAML TLS_CERT TLS_KEY CACERT [CERT_DNS_NAME]
# CERT_DNS_NAME: the name to check a TLS server by when its certificate does
# not name 127.0.0.1 (curl --resolve maps it to 127.0.0.1, no lookup is done).
# Writes BASE/config.yml, starts docker-registry on a free port and waits for
# /v2/ to answer; retries with another port when the chosen one was taken.
# Sets _REG_PORT and _REG_LAST_PID.
_reg_launch() {
  local name=$1 base=$2 auth=$3 cert=$4 key=$5 cacert=$6 dns=${7:-}
  local cfg=$base/config.yml log=$base/registry.log scheme=http
  local -a env_args=() curl_args=(--noproxy '*' -s -o /dev/null --max-time 2 -w '%{http_code}')
  local -a overrides=()
  local v attempt i code port pid
  if [[ -n $cert ]]; then
    scheme=https
    curl_args+=(--cacert "$cacert")
  fi
  mkdir -p "$base/storage"
  # Keep the caller's REGISTRY_* variables (ours included) away from distribution.
  for v in $(compgen -e); do
    [[ $v == REGISTRY_* ]] && env_args+=(-u "$v")
  done
  read -r -a overrides <<<"${REGISTRY_OVERRIDES:-}"
  env_args+=("${overrides[@]}")
  for ((attempt = 1; attempt <= 5; attempt++)); do
    port=$(_reg_free_port)
    {
      echo "# generated by tests/support/registry/registry.sh"
      echo "version: 0.1"
      echo "log:"
      echo "  level: info"
      echo "  formatter: text"
      echo "  accesslog:"
      echo "    disabled: false"
      echo "storage:"
      echo "  filesystem:"
      echo "    rootdirectory: $base/storage"
      echo "  delete:"
      echo "    enabled: true"
      echo "  maintenance:"
      echo "    uploadpurging:"
      echo "      enabled: false"
      echo "http:"
      echo "  addr: 127.0.0.1:$port"
      echo "  secret: $(_reg_random)"
      echo "  headers:"
      echo "    X-Content-Type-Options: [nosniff]"
      if [[ -n $cert ]]; then
        echo "  tls:"
        echo "    certificate: $cert"
        echo "    key: $key"
      fi
      if [[ -n $auth ]]; then printf '%s\n' "$auth"; fi
      if [[ -n ${REGISTRY_EXTRA_YAML:-} ]]; then printf '%s\n' "$REGISTRY_EXTRA_YAML"; fi
    } >"$cfg"
    echo "==== registry.sh: starting on 127.0.0.1:$port (attempt $attempt)" >>"$log"
    _reg_spawn "$name" "$log" env "${env_args[@]}" /usr/bin/docker-registry serve "$cfg"
    pid=$_REG_LAST_PID
    for ((i = 0; i < 100; i++)); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      # Only trust an answer once our process says it holds the port: a
      # parallel test's registry may have grabbed it in the meantime.
      if ! grep -q "listening on 127.0.0.1:$port" "$log"; then
        sleep 0.1
        continue
      fi
      if [[ -n $dns ]]; then
        code=$(curl "${curl_args[@]}" --resolve "$dns:$port:127.0.0.1" \
          "$scheme://$dns:$port/v2/" 2>/dev/null) || true
      else
        code=$(curl "${curl_args[@]}" "$scheme://127.0.0.1:$port/v2/" 2>/dev/null) || true
      fi
      if [[ $code == 200 || $code == 401 ]]; then
        _REG_PORT=$port
        _REG_LAST_PID=$pid
        return 0
      fi
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      _reg_kill "$pid"
      _reg_err "$name: docker-registry did not answer on 127.0.0.1:$port within 10 s"
      _reg_log_tail "$log"
      return 1
    fi
    if ! tail -n 5 "$log" | grep -q 'address already in use'; then
      _reg_err "$name: docker-registry exited during startup"
      _reg_log_tail "$log"
      return 1
    fi
  done
  _reg_err "$name: no free port after 5 attempts"
  _reg_log_tail "$log"
  return 1
}

registry_start() { # NAME MODE DIR [TOKEN_SERVER_ARGS...]
  if (($# < 3)); then
    _reg_err "usage: registry_start NAME open|htpasswd|token|tls DIR [token server args]"
    return 1
  fi
  local name=$1 mode=$2 dir=$3
  shift 3
  local p base auth="" cert="" key="" cacert="" scheme=http pass tport
  p=$(_reg_prefix "$name") || return 1
  mkdir -p "$dir/$name"
  base=$(cd "$dir/$name" && pwd)
  case $mode in
    open) ;;
    htpasswd)
      pass=$(_reg_random)
      htpasswd -Bbn alice "$pass" >"$base/htpasswd" 2>/dev/null || { _reg_err "htpasswd failed"; return 1; }
      auth=$(printf '%s\n' "auth:" "  htpasswd:" "    realm: paddle-test-registry" "    path: $base/htpasswd")
      export "${p}_USER=alice" "${p}_PASS=$pass"
      ;;
    token)
      pass=$(_reg_random)
      mkdir -p "$base/token"
      printf 'bob:%s\n' "$pass" >"$base/token/users"
      rm -f "$base/token/port"
      _reg_spawn "$name" "$base/token/stderr.log" "$_REG_PY" -u "$_REG_HERE/token_server.py" \
        --listen 127.0.0.1:0 --port-file "$base/token/port" --users "$base/token/users" \
        --key "$base/token/signer.key" --cert "$base/token/signer.crt" \
        --issuer paddle-test-issuer --service paddle-test-registry \
        --log "$base/token/token.log" "$@"
      local tpid=$_REG_LAST_PID
      if ! _reg_wait_file "$base/token/port" "$tpid" "$name: token server"; then
        _reg_log_tail "$base/token/stderr.log"
        return 1
      fi
      tport=$(<"$base/token/port")
      auth=$(printf '%s\n' "auth:" "  token:" "    realm: http://127.0.0.1:$tport/token" \
        "    service: paddle-test-registry" "    issuer: paddle-test-issuer" \
        "    rootcertbundle: $base/token/signer.crt")
      export "${p}_USER=bob" "${p}_PASS=$pass" "${p}_TOKEN_HOST=127.0.0.1:$tport" \
        "${p}_TOKEN_URL=http://127.0.0.1:$tport/token" "${p}_TOKEN_LOG=$base/token/token.log" \
        "${p}_TOKEN_PID=$tpid" "${p}_TOKEN_USERS=$base/token/users" \
        "${p}_TOKEN_CERT=$base/token/signer.crt"
      ;;
    tls)
      mkdir -p "$base/tls"
      if ! { _reg_make_ca "$base/tls" ca && _reg_make_ca "$base/tls" wrong-ca &&
        _reg_make_cert "$base/tls" server ca "IP:127.0.0.1,DNS:localhost" &&
        _reg_make_cert "$base/tls" wrongname ca "DNS:wrong.example"; }; then
        _reg_err "$name: openssl failed making test certificates"
        return 1
      fi
      cert=$base/tls/server.crt key=$base/tls/server.key cacert=$base/tls/ca.crt scheme=https
      # A second registry whose certificate is fine except for the name.
      _reg_launch "${name}" "$base/wrongname" "" "$base/tls/wrongname.crt" \
        "$base/tls/wrongname.key" "$cacert" wrong.example || return 1
      export "${p}_WRONGNAME_HOST=127.0.0.1:$_REG_PORT" "${p}_WRONGNAME_PID=$_REG_LAST_PID" \
        "${p}_WRONGNAME_LOG=$base/wrongname/registry.log"
      export "${p}_CA=$cacert" "${p}_WRONG_CA=$base/tls/wrong-ca.crt"
      ;;
    *)
      _reg_err "unknown mode '$mode' (open, htpasswd, token, tls)"
      return 1
      ;;
  esac
  _reg_launch "$name" "$base" "$auth" "$cert" "$key" "$cacert" || return 1
  export "${p}_HOST=127.0.0.1:$_REG_PORT" "${p}_URL=$scheme://127.0.0.1:$_REG_PORT" \
    "${p}_PID=$_REG_LAST_PID" "${p}_LOG=$base/registry.log" "${p}_DIR=$base" \
    "${p}_STORAGE=$base/storage" "${p}_CONFIG=$base/config.yml"
  if [[ $mode == tls ]]; then
    local ver
    ver=$(curl --noproxy '*' --http2 -s -o /dev/null -w '%{http_version}' --max-time 5 \
      --cacert "$cacert" "https://127.0.0.1:$_REG_PORT/v2/" 2>/dev/null) || ver=none
    export "${p}_HTTP_VERSION=$ver"
  fi
}

# containerd_start DIR SNAPSHOTTER [EXTRA_TOML]: Debian's containerd on a private socket
# (DIR/containerd.sock), its root, state and opt dirs under DIR, the CRI plugin off,
# SNAPSHOTTER (native or overlayfs) on and the other snapshotters off, in a mount
# namespace of its own (its mounts never reach the machine's). EXTRA_TOML is appended to
# the config. Exports CONTAINERD_ADDRESS; stopped by registry_stop_all.
# CONTAINERD_CRI=1 keeps the CRI plugin on (bench/node_pull.sh pulls through it, as
# kubelet does); EXTRA_TOML then configures it.
containerd_start() {
  local dir=$1 snap=$2 extra=${3:-} off i
  mkdir -p "$dir"
  off='"io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"'
  [[ ${CONTAINERD_CRI:-0} == 1 ]] || off='"io.containerd.grpc.v1.cri", '$off
  [[ $snap == native ]] && off+=', "io.containerd.snapshotter.v1.overlayfs"'
  cat >"$dir/config.toml" <<CONF
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = [$off]
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
$extra
CONF
  _reg_spawn containerd "$dir/containerd.log" unshare --mount --propagation private containerd --config "$dir/config.toml"
  export CONTAINERD_ADDRESS=$dir/containerd.sock
  for ((i = 0; i < 100; i++)); do
    ctr version >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  _reg_err "containerd did not answer on $dir/containerd.sock"
  return 1
}

registry_access_count() { # LOGFILE METHOD PATH_REGEX [STATUS_REGEX]
  local log=$1 method=$2 path_re=$3 status_re=${4:-[0-9]+}
  # Patterns travel through the environment: awk -v would eat backslashes.
  _RA_M="\"$method" _RA_P="^($path_re)" _RA_S="^($status_re)\$" awk '
    $4 ~ /^\[/ && $6 == ENVIRON["_RA_M"] && $7 ~ ENVIRON["_RA_P"] && $9 ~ ENVIRON["_RA_S"] { n++ }
    END { print n + 0 }' "$log"
}

proxy_start() { # NAME UPSTREAM_HOSTPORT DIR
  if (($# != 3)); then
    _reg_err "usage: proxy_start NAME UPSTREAM_HOSTPORT DIR"
    return 1
  fi
  local name=$1 upstream=$2 dir=$3 p base pid
  p=$(_reg_prefix "$name") || return 1
  mkdir -p "$dir/$name"
  base=$(cd "$dir/$name" && pwd)
  : >"$base/rules.jsonl"
  rm -f "$base/port"
  _reg_spawn "$name" "$base/stderr.log" "$_REG_PY" -u "$_REG_HERE/fault_proxy.py" \
    --listen 127.0.0.1:0 --port-file "$base/port" --upstream "$upstream" \
    --rules "$base/rules.jsonl" --log "$base/proxy.log"
  pid=$_REG_LAST_PID
  if ! _reg_wait_file "$base/port" "$pid" "$name: fault proxy"; then
    _reg_log_tail "$base/stderr.log"
    return 1
  fi
  export "${p}_HOST=127.0.0.1:$(<"$base/port")" "${p}_URL=http://127.0.0.1:$(<"$base/port")" \
    "${p}_RULES=$base/rules.jsonl" "${p}_PLOG=$base/proxy.log" "${p}_PID=$pid"
}

proxy_rules() { # NAME 'JSON LINES'
  local p var file
  p=$(_reg_prefix "$1") || return 1
  var=${p}_RULES
  file=${!var:-}
  if [[ -z $file ]]; then
    _reg_err "proxy_rules: no proxy named '$1'"
    return 1
  fi
  _REG_RULES_GEN=$((_REG_RULES_GEN + 1))
  # The generation comment makes every call a change, which resets counters;
  # rename makes the switch atomic for the proxy, which reads per request.
  printf '%s\n# generation %d\n' "${2:-}" "$_REG_RULES_GEN" >"$file.tmp"
  mv -f "$file.tmp" "$file"
}
