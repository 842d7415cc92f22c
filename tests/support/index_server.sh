# Sourced by the integration tests that talk to tests/support/index_server.py (after
# common.sh, in $WORK): a client environment free of the host's pip settings, servers started and stopped with the test, and the run/rc_is
# helpers that keep each command's output under logs/.
mkdir -p "$WORK/logs"
[[ -d "$BASE_ROOTFS" ]] || { echo "missing fixture $BASE_ROOTFS (run scripts/test.sh)"; exit 1; }
# This host exports PIP_* defaults; every check starts without them (the checks of
# those defaults set them on their command line), and without the user's netrc.
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export PIP_CONFIG_FILE=/dev/null
: >"$WORK/empty.netrc"
export NETRC=$WORK/empty.netrc
SERVER_PIDS=()
stop_servers() {
  local p
  for p in "${SERVER_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${SERVER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  return 0
}
trap stop_servers EXIT
# start_server NAME ROOT [ARGS...]: sets PORT_NAME and URL_NAME (http://127.0.0.1:PORT);
# the access log is $WORK/NAME.log.
start_server() {
  local name=$1 root=$2 i pid
  shift 2
  rm -f "$WORK/$name.port"
  python3 "$SUPPORT/index_server.py" --root "$root" --port-file "$WORK/$name.port" \
    --log "$WORK/$name.log" "$@" 2>"$WORK/$name.stderr" &
  pid=$!
  SERVER_PIDS+=("$pid")
  for ((i = 0; i < 300; i++)); do
    [[ -s "$WORK/$name.port" ]] && break
    kill -0 "$pid" 2>/dev/null || { echo "index server $name died: $(cat "$WORK/$name.stderr")"; exit 1; }
    sleep 0.1
  done
  [[ -s "$WORK/$name.port" ]] || { echo "index server $name did not start"; exit 1; }
  touch "$WORK/$name.log"
  printf -v "PORT_$name" '%s' "$(cat "$WORK/$name.port")"
  printf -v "URL_$name" 'http://127.0.0.1:%s' "$(cat "$WORK/$name.port")"
}
# run TAG CMD...: stdout and stderr kept in logs/TAG.out and logs/TAG.err, exit code in RC.
run() {
  RC=0
  "${@:2}" >"logs/$1.out" 2>"logs/$1.err" || RC=$?
}
# rc_is DESCRIPTION WANT TAG: the last run exited WANT.
rc_is() {
  if [[ $RC -eq $2 ]]; then pass "$1"; else fail "$1 (exit $RC, wanted $2): $(tail -4 "logs/$3.err")"; fi
}
