#!/usr/bin/env bash
# Failure injection as a mechanism (issue 34): for build (gzip and zstd, files, data
# and wheels layers), pull, copy to docker-archive:, warm export and lock,
#  (a) the cache, then the output, on a tmpfs too small for the job (unshare -m, as
#      root), and chosen writes failed exactly with ENOSPC (strace inject);
#  (b) SIGINT and SIGTERM delivered at chosen writes (strace inject, so the points are
#      exact and repeatable);
# each run must end with its documented exit code (4 for a full disk, 130/143 for the
# signals) and message, no sanitizer report, no temporary file left, and a rerun with
# space must succeed with the same result as an undisturbed run. scripts/test.sh runs
# this with the ASan+UBSan binary (PI=build-asan/...); under ptrace LeakSanitizer cannot
# run, so leak checks are off for the strace runs only.
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
cd "$WORK"
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
export PIP_CONFIG_FILE=/dev/null
export DOCKER_CONFIG=$WORK/docker-config
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TMPDIR=$WORK/tmp
mkdir -p "$DOCKER_CONFIG" "$TMPDIR"
trap registry_stop_all EXIT
[[ -d $WHEELS ]] || { echo "missing fixture $WHEELS (run scripts/test.sh)"; exit 1; }

# ---- the inputs: small, so ~60 runs fit the budget under the sanitizers --------------
mkdir -p in/src in/models in/wheels
printf 'print(1)\n' >in/src/app.py
head -c 1500000 /dev/urandom >in/models/w.bin
python3 -c 'import sys; sys.stdout.write("".join("row %d of the model card\n" % i for i in range(60000)))' >in/models/card.txt
for c in gzip zstd; do
  printf 'image: {name: example.com/inj/app, tags: [v1]}\ncompression: %s\nlayers:\n  - name: models\n    data: [{from: models/, to: /opt/models/}]\n  - name: app\n    files: [{from: src/, to: /app/}]\n' \
    "$c" >in/$c.yaml
done
cp "$WHEELS"/purepkg-*.whl "$WHEELS"/nspkg_a-*.whl "$WHEELS"/nspkg_b-*.whl in/wheels/
grep -E '^(purepkg|nspkg-a|nspkg-b)==' "$WHEELS/wheels.lock" >in/wheels.lock
printf 'image: {name: example.com/inj/deps, tags: [v1]}\npython: {version: "3.11"}\nlayers:\n  - name: deps\n    wheels: {dir: wheels/, lock: wheels.lock}\n' >in/wheels.yaml
printf -- '--no-index\npurepkg==1.0\nnspkg-a==1.0\n' >in/requirements.txt
printf 'python: {version: "3.11"}\nlayers:\n  - name: deps\n    wheels: {lock: requirements.lock}\n' >in/lock.yaml

registry_start reg open "$WORK/srv"
"$PI" build in/gzip.yaml -q -j1 --revision r --cache-dir "$WORK/seed-cache" -o oci:src:v1 >/dev/null
"$PI" push oci:src:v1 "$REG_HOST/inj/img:v1" --insecure -q >/dev/null

# ---- the workloads: run JOB CACHE OUT prints the result's fingerprint ----------------
# (the image digest, or the sha256 of the file written). $WRAP, when set, goes before
# paddle-image (strace), so only paddle-image is traced, not the shell around it.
run_job() {
  local job=$1 cache=$2 out=$3
  case $job in
    build-gzip | build-zstd | build-wheels)
      ${WRAP:-} "$PI" build "in/${job#build-}.yaml" -q -j1 --revision r --cache-dir "$cache" -o "oci:$out/lay:v1" | sed 's/.*@//' ;;
    pull)
      ${WRAP:-} "$PI" pull "$REG_HOST/inj/img:v1" -o "oci:$out/lay:v1" --insecure -q --jobs 1 --retries 0 >/dev/null &&
        manifest_digest "$out/lay" v1 ;;
    copy)
      ${WRAP:-} "$PI" copy "$REG_HOST/inj/img:v1" "docker-archive:$out/img.tar" --insecure -q --jobs 1 --retries 0 >/dev/null &&
        sha256sum "$out/img.tar" | cut -d' ' -f1 ;;
    export)
      ${WRAP:-} "$PI" warm export oci:src:v1 --name example.com/inj/app:v1 -o "$out/img.oci.tar" >/dev/null && sha256sum "$out/img.oci.tar" | cut -d' ' -f1 ;;
    lock)
      # --jobs 1: the metadata is then read in the main thread, the one strace follows.
      ${WRAP:-} "$PI" lock in/requirements.txt --spec in/lock.yaml -f "$WORK/in/wheels" --cache-dir "$cache" -q --jobs 1 \
        -o "$out/requirements.lock" >/dev/null && sha256sum "$out/requirements.lock" | cut -d' ' -f1 ;;
  esac
}
JOBS=(build-gzip build-zstd build-wheels pull copy export lock)
declare -A WANT
for job in "${JOBS[@]}"; do
  mkdir -p "ref/$job/out"
  WANT[$job]=$(run_job "$job" "$WORK/ref/$job/cache" "$WORK/ref/$job/out")
  check "$job: an undisturbed run gives a result (${WANT[$job]:0:19})" test -n "${WANT[$job]}"
done

# What a disturbed run may leave: nothing temporary, nowhere.
leftovers() { # DIR...
  find "$@" \( -name '*.tmp*' -o -name '.*.tmp-*' -o -path '*/.tmp/*' -o -name '*.partial' \) -type f 2>/dev/null
}
sanitizer_report() { # FILE
  grep -E 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$1"
}

# judge NAME RC WANT_RC PATTERN ERRFILE CACHE OUT: the disturbed run's verdict, then a
# rerun with space and no disturbance, which must give the undisturbed result.
judge() {
  local name=$1 rc=$2 want_rc=$3 pat=$4 err=$5 cache=$6 out=$7 job=${1%%:*} ok=1 left got
  if [[ $rc -ne $want_rc ]]; then
    echo "$name: exit $rc, wanted $want_rc: $(grep -v '^\[' "$err" | head -3)"
    ok=0
  elif ! grep -qE -- "$pat" "$err"; then
    echo "$name: stderr lacks /$pat/: $(head -3 "$err")"
    ok=0
  fi
  if sanitizer_report "$err" >/dev/null; then
    echo "$name: sanitizer report:"
    sanitizer_report "$err" | head -5
    ok=0
  fi
  left=$(leftovers "$cache" "$out" "$TMPDIR")
  if [[ -n $left ]]; then
    echo "$name: temporary files left: $left"
    ok=0
  fi
  if [[ -d $out/lay/blobs ]] && ! blobs_intact "$out/lay"; then
    ok=0
  fi
  got=$(run_job "$job" "$cache" "$out" 2>"$err.rerun") || true
  if [[ $got != "${WANT[$job]}" ]]; then
    echo "$name: the rerun gave '$got', wanted '${WANT[$job]}': $(head -3 "$err.rerun")"
    ok=0
  fi
  [[ $ok -eq 1 ]]
}

fresh() { # NAME: an empty cache and output for one disturbed run
  rm -rf "runs/$1"
  mkdir -p "runs/$1/cache" "runs/$1/out"
}

# ---- (a) a file system too small for the job ---------------------------------------
# unshare -m: a private mount namespace (root), so the tmpfs is ours alone; the job's
# leftovers on it are listed before it goes.
tiny_fs() { # JOB WHICH(cache|out) FREE_KIB: a 4 MiB tmpfs with FREE_KIB left
  local job=$1 which=$2 free=$3 name="$1:$2-full-$3k" rc=0 dir
  fresh "$name"
  dir=$WORK/runs/$name/$which
  unshare -m bash -c '
    mount -t tmpfs -o size=4m tmpfs "$1" || exit 99
    head -c $((4096 * 1024 - $7 * 1024)) /dev/zero >"$1/.filler" || exit 98
    rc=0
    "$2" "$3" "$4" "$5" || rc=$?
    find "$1" \( -name "*.tmp*" -o -name ".*.tmp-*" -o -path "*/.tmp/*" \) -type f >"$6"
    exit $rc' _ "$dir" "$WORK/run_job_exported" "$job" "$WORK/runs/$name/cache" "$WORK/runs/$name/out" \
    "$WORK/runs/$name/tmpfs-left" "$free" >/dev/null 2>"runs/$name.err" || rc=$?
  if [[ -s runs/$name/tmpfs-left ]]; then
    echo "$name: temporary files left on the full file system: $(cat "runs/$name/tmpfs-left")"
    return 1
  fi
  judge "$name" "$rc" 4 "No space left on device" "runs/$name.err" "$WORK/runs/$name/cache" "$WORK/runs/$name/out"
}
# The job, as a command a child bash can run.
cat >run_job_exported <<SH
#!/usr/bin/env bash
set -euo pipefail
cd "$WORK"
$(declare -f run_job manifest_digest)
PI='$PI' REG_HOST='$REG_HOST' WORK='$WORK'
# shellcheck disable=SC2086 # WRAP is a command line: its words must split
run_job "\$@" >/dev/null
SH
chmod +x run_job_exported
# A full file system (nothing left) and one that fills mid-way (a few KiB left for the
# small jobs, 1 MiB for those that write a few MiB).
for job in build-gzip build-zstd build-wheels lock; do
  check "$job: the cache on a full file system: exit 4, nothing left, a rerun succeeds" tiny_fs "$job" cache 0
done
for job in "${JOBS[@]}"; do
  check "$job: the output on a full file system: exit 4, nothing left, a rerun succeeds" tiny_fs "$job" out 0
done
for job in build-gzip build-zstd pull copy export; do
  check "$job: the output on a file system that fills mid-way: exit 4, a rerun succeeds" tiny_fs "$job" out 1024
done
check "build-wheels: the cache fills mid-way" tiny_fs build-wheels cache 8

# ---- (b) chosen writes fail, and signals arrive, exactly -----------------------------
# strace without -f follows paddle-image's main thread alone, so `when=N` names one write
# of one thread. Its writes to files of ours are counted in four undisturbed runs. Other
# writes of that thread move between runs: a wake-up of curl's or a worker's, and under
# UBSan the 16-byte pipe writes with which the sanitizer probes whether a vtable is
# readable (their number follows its type cache, so addresses change it: the runs are
# made without address randomisation, setarch -R, where the machine allows it, and the
# heap's addresses still follow the threads' timing). So no one number
# is "the last file write": each counted run names its own first, middle and last file
# write, and an injection tries those candidates, the most agreed on first, until the
# fault lands on a file of ours (its strace log says where it landed).
# The awk function that says whether a line of strace -y is a write to a file of ours
# (under $WORK, as w; not a device, pipe or socket): one rule for counting, checking
# where a fault landed and choosing the next try.
OURS_AWK='function ours(l) { return index(l, "<" w "/") && l !~ /<\/dev\/|pipe:|socket:/ } '
NO_ASLR=""
if setarch -R true 2>/dev/null; then NO_ASLR="setarch -R"; fi
count_file_writes() { # JOB: prints "first C...", "mid C..." and "last C..." lines
  local run
  for run in 1 2 3 4; do
    fresh "count-$1-$run"
    WRAP="$NO_ASLR strace -qq -y -e trace=write -o $WORK/runs/count-$1-$run.strace" \
      ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
      ./run_job_exported "$1" "$WORK/runs/count-$1-$run/cache" "$WORK/runs/count-$1-$run/out" >/dev/null 2>&1 || true
    awk -v w="$WORK" "$OURS_AWK"'/^write\(/ { n++; if (ours($0)) print n }' \
      "runs/count-$1-$run.strace" >"runs/count-$1-$run.idx"
  done
  local kind
  for kind in first mid last; do
    printf '%s' "$kind"
    for run in 1 2 3 4; do
      awk -v kind="$kind" '{ p[NR] = $1 } END {
        if (NR == 0) exit
        print (kind == "first" ? p[1] : kind == "last" ? p[NR] : p[int(NR / 2) + 1]) }' "runs/count-$1-$run.idx"
    done | sort -n | uniq -c | sort -k1,1nr -k2,2n | awk '{ printf " %s", $2 }'
    echo
  done
}
injected_is_ours() { # STRACE_LOG WHEN: the WHEN-th write of the log went to a file of ours
  awk -v w="$WORK" -v k="$2" "$OURS_AWK"'/^write\(/ { n++; if (n == k) ok = ours($0) }
    END { exit !ok }' "$1"
}
inject() { # JOB WHAT(enospc|int|term) KIND(first|mid|last) CANDIDATE...
  local job=$1 what=$2 kind=$3 name="$1:$2-at-$3" rc spec want_rc pat attempt when
  shift 3
  local -a cands=("$@")
  # A run may still put a write of another kind where the counted runs had a file
  # write (ASan probes memory with a write to a pipe; a run's last write may be its
  # summary to stdout). Such a run tests nothing of ours, so another is tried, twelve
  # runs at most: first the file write of that run nearest to where the fault fell, at
  # or before it when there is one (with other tests on the cores, a thread's wake-ups
  # shift the count by a few writes from run to run; after a signal, the writes that
  # follow are the shutdown's, so looking later drifts past the job's end), never a
  # number tried already; then the next counted candidate, round the list.
  local next="" tried=" "
  for attempt in 1 2 3 4 5 6 7 8 9 10 11 12; do
    if [[ -n $next ]]; then
      when=$next
    else
      when=${cands[$(((attempt - 1) % ${#cands[@]}))]}
    fi
    tried+="$when "
    case $what in
      enospc) spec="write:error=ENOSPC:when=$when"; want_rc=4; pat="No space left on device" ;;
      int) spec="write:signal=INT:when=$when"; want_rc=130; pat="interrupted \(SIGINT\)" ;;
      term) spec="write:signal=TERM:when=$when"; want_rc=143; pat="terminated \(SIGTERM\)" ;;
    esac
    rc=0
    fresh "$name"
    WRAP="$NO_ASLR strace -qq -y -o $WORK/runs/$name.strace -e trace=write -e inject=$spec" \
      ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
      ./run_job_exported "$job" "$WORK/runs/$name/cache" "$WORK/runs/$name/out" >/dev/null 2>"runs/$name.err" || rc=$?
    if injected_is_ours "runs/$name.strace" "$when"; then
      judge "$name (write $when)" "$rc" "$want_rc" "$pat" "runs/$name.err" "$WORK/runs/$name/cache" "$WORK/runs/$name/out"
      return
    fi
    echo "$name: attempt $attempt: write $when of this run was not to a file of ours ($(awk -v k="$when" '/^write\(/ && ++n == k { print substr($0, 1, 60) }' "runs/$name.strace")); next candidate" >&2
    # This run's file write nearest to $when (at or before it first), not tried yet.
    next=$(awk -v w="$WORK" -v k="$when" -v tried="$tried" "$OURS_AWK"'/^write\(/ { n++
        if (ours($0) && index(tried, " " n " ") == 0) { d = k - n; if (d < 0) d = 1000000 - d
          if (best == "" || d < bd) { best = n; bd = d } } } END { print best }' "runs/$name.strace")
  done
  echo "$name: in 12 runs over the candidates ${cands[*]} and their neighbours no fault landed on a file of ours" >&2
  return 1
}
for job in "${JOBS[@]}"; do
  declare -A at=()
  while read -r kind rest; do at[$kind]=$rest; done < <(count_file_writes "$job")
  if [[ -z ${at[first]:-} ]]; then
    fail "$job: no write of its main thread to a file was seen"
    continue
  fi
  # shellcheck disable=SC2086 # the candidates are words
  {
    check "$job: ENOSPC at its first file write (write ${at[first]} of its main thread)" inject "$job" enospc first ${at[first]}
    check "$job: ENOSPC mid-way (write ${at[mid]})" inject "$job" enospc mid ${at[mid]}
    check "$job: SIGINT at its first file write" inject "$job" int first ${at[first]}
    check "$job: SIGINT at its last file write (write ${at[last]})" inject "$job" int last ${at[last]}
    check "$job: SIGTERM mid-way" inject "$job" term mid ${at[mid]}
  }
done
finish
