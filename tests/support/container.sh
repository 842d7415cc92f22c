#!/usr/bin/env bash
# Container helpers for paddle-image e2e tests. Source this file, or run it
# directly as `container.sh FUNC ARGS...`.
#
#   run_in_bundle BUNDLE_DIR CMD...   run CMD in an OCI runtime bundle with runc
#   podman_load ARCHIVE               load a docker-archive / oci-archive into
#                                     isolated podman storage under $PODMAN_TMP
#   podman_isolated ARGS...           plain podman using that same storage
#   podman_run IMAGE [CMD...]         podman run --rm with the limits this host needs
#   podman_cleanup                    delete everything under $PODMAN_TMP
#
# Needs root, runc, podman (vfs driver) and /usr/bin/python3 (edits the JSON).
# The functions behave under `set -euo pipefail`; sourcing this file does not
# change the caller's shell options.

# run_in_bundle BUNDLE_DIR CMD...
# Leaves BUNDLE_DIR alone: writes a patched copy of its config.json into a
# temporary shadow bundle whose root.path points, as an absolute path, at
# BUNDLE_DIR's rootfs. The patch sets process.args=CMD and process.terminal=false
# (runc's only requirement here; otherwise "open /dev/tty: no such device or
# address"). stdin is /dev/null; the container's stdout/stderr go to ours.
# Returns the exit code of CMD. The container is always deleted.
# Env: RUN_TIMEOUT (seconds, default 300; 0 turns the timeout off),
#      RUN_ENV (extra env entries separated by newlines, e.g. $'A=1\nB=2'),
#      RUNC (default runc).
run_in_bundle() {
    if [[ $# -lt 2 ]]; then
        echo "usage: run_in_bundle BUNDLE_DIR CMD..." >&2
        return 2
    fi
    local bundle rootfs shadow id rc=0 runc=${RUNC:-runc} to=${RUN_TIMEOUT:-300}
    bundle=$(realpath -e -- "$1") || return 2
    shift
    [[ -f "$bundle/config.json" ]] || { echo "run_in_bundle: $bundle/config.json missing" >&2; return 2; }
    shadow=$(mktemp -d "${TMPDIR:-/tmp}/pi-bundle.XXXXXX") || return 1
    id="pi-$$-${RANDOM}${RANDOM}-$(date +%s%N)"

    if ! /usr/bin/python3 - "$bundle" "$shadow/config.json" "${RUN_ENV:-}" "$@" <<'PY'
import json, os, sys
bundle, out, extra_env, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with open(os.path.join(bundle, "config.json")) as f:
    cfg = json.load(f)
root = cfg.setdefault("root", {})
path = root.get("path", "rootfs")
root["path"] = path if os.path.isabs(path) else os.path.join(bundle, path)
proc = cfg.setdefault("process", {})
proc["args"] = args
proc["terminal"] = False
proc.pop("consoleSize", None)
if extra_env:
    proc["env"] = proc.get("env", []) + [e for e in extra_env.split("\n") if e]
with open(out, "w") as f:
    json.dump(cfg, f, indent=1)
PY
    then
        rm -rf -- "$shadow"
        return 1
    fi

    if [[ "$to" != 0 ]]; then
        timeout --kill-after=10 "$to" "$runc" run --bundle "$shadow" "$id" </dev/null || rc=$?
    else
        "$runc" run --bundle "$shadow" "$id" </dev/null || rc=$?
    fi
    "$runc" delete --force "$id" >/dev/null 2>&1 || true
    rm -rf -- "$shadow"
    return "$rc"
}

# Global podman flags for isolated, daemonless, root-only use of this host:
# separate graph/run/tmp dirs (no contact with /var/lib/containers), the vfs
# driver (no overlay mounts; plain rm -rf cleans up), cgroupfs (no systemd),
# and file events (no journald). podman refuses a runroot longer than 50 characters
# (every command exits 125), and a CI checkout's work directories are deeper than
# that: then the runroot is /tmp/pi-podman-HASH, named from PODMAN_TMP so that every
# call (and podman_cleanup) finds the same one.
_podman_runroot() {
    local r="$PODMAN_TMP/run"
    if (( ${#r} > 50 )); then
        r=/tmp/pi-podman-$(printf '%s' "$PODMAN_TMP" | sha256sum | cut -c1-16)
    fi
    printf '%s\n' "$r"
}

_podman_flags() {
    if [[ -z "${PODMAN_TMP:-}" ]]; then
        echo "podman helpers: set PODMAN_TMP to a scratch directory, e.g. export PODMAN_TMP=\$(mktemp -d)" >&2
        return 2
    fi
    local runroot
    runroot=$(_podman_runroot)
    mkdir -p "$PODMAN_TMP/root" "$runroot" "$PODMAN_TMP/tmp"
    _PODMAN_FLAGS=(--root "$PODMAN_TMP/root" --runroot "$runroot"
                   --tmpdir "$PODMAN_TMP/tmp" --storage-driver vfs
                   --cgroup-manager cgroupfs --events-backend file)
}

podman_isolated() {
    local _PODMAN_FLAGS
    _podman_flags || return 2
    podman "${_PODMAN_FLAGS[@]}" "$@"
}

# podman_load ARCHIVE: prints the loaded image name(s), one per line
# (e.g. localhost/pitest:t). podman's progress output goes to stderr.
podman_load() {
    if [[ $# -ne 1 ]]; then
        echo "usage: podman_load ARCHIVE" >&2
        return 2
    fi
    local out rc=0
    out=$(podman_isolated load --input "$1" 2>&1) || rc=$?
    if [[ $rc -ne 0 ]]; then
        printf '%s\n' "$out" >&2
        return "$rc"
    fi
    # "Loaded image: a" or "Loaded image(s): a,b"
    printf '%s\n' "$out" | sed -n 's/^Loaded image[^:]*: *//p' | tr ',' '\n' | sed 's/^ *//; /^$/d'
}

# podman_run IMAGE [CMD...]: run a loaded image once. The explicit ulimits are
# needed here: podman's defaults (nofile 1048576, nproc above conmon's 32768)
# fail under runc with "error setting rlimit type 7/6: operation not permitted"
# because the sandbox lacks CAP_SYS_RESOURCE.
podman_run() {
    podman_isolated run --rm --network none \
        --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$@" </dev/null
}

podman_cleanup() {
    [[ -n "${PODMAN_TMP:-}" && -d "$PODMAN_TMP" ]] || return 0
    podman_isolated rm --all --force >/dev/null 2>&1 || true
    # Unmount anything left (e.g. a container's shm) before removing the tree.
    local m runroot
    runroot=$(_podman_runroot)
    while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done < <(awk -v p="$PODMAN_TMP/" -v r="$runroot/" 'index($2, p) == 1 || index($2, r) == 1 {print $2}' /proc/self/mounts | sort -r)
    rm -rf -- "$PODMAN_TMP" "$runroot"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    case "${1:-}" in
        run_in_bundle|podman_load|podman_isolated|podman_run|podman_cleanup) "$@" ;;
        *) echo "usage: $0 {run_in_bundle|podman_load|podman_isolated|podman_run|podman_cleanup} ARGS..." >&2; exit 2 ;;
    esac
fi
