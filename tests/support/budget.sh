#!/usr/bin/env bash
# budget.sh NAME CMD...: runs one test under the per-test time budget, so a slow test
# is caught in the session that made it, not in CI (docs/testing.md).
#   PADDLE_IMAGE_TEST_BUDGET  seconds a single test may take (default 600)
#   PADDLE_IMAGE_TEST_TIMES   when set, a file that gets one line per test:
#                             NAME SECONDS EXIT-STATUS CPU-SECONDS USER SYSTEM
#                             (CPU: user + system of the test's processes, what the
#                             test costs the cores when tests run side by side; then
#                             the two apart)
# Past the budget the test is stopped (TERM, then KILL 30 s later, its whole process
# group) and this exits 124 with a message naming the test and the budget.
set -uo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: budget.sh NAME CMD..." >&2
  exit 2
fi
name=$1
shift
budget=${PADDLE_IMAGE_TEST_BUDGET:-600}
if ! [[ $budget =~ ^[1-9][0-9]*$ ]]; then
  echo "budget.sh: PADDLE_IMAGE_TEST_BUDGET='$budget' is not a whole number of seconds" >&2
  exit 2
fi
start=$(date +%s%N)
timeout --kill-after=30 "$budget" "$@"
rc=$?
elapsed=$((($(date +%s%N) - start) / 1000000000))
if [[ -n ${PADDLE_IMAGE_TEST_TIMES:-} ]]; then
  # `times` (in this shell: a pipe or $(...) would ask a subshell, whose children are
  # none): this shell's, then its children's user and system time ("0m1.234s").
  times_file=$(mktemp)
  times >"$times_file"
  cpu=$(awk 'NR==2 {t=0; for (i=1;i<=2;i++) {split($i,a,"m"); s[i]=a[1]*60+a[2]; t+=s[i]}
    printf "%.0f %.0f %.0f", t, s[1], s[2]}' "$times_file")
  rm -f "$times_file"
  echo "$name $elapsed $rc ${cpu:-0 0 0}" >>"$PADDLE_IMAGE_TEST_TIMES"
fi
if [[ $rc -eq 124 || $rc -eq 137 ]] && [[ $elapsed -ge $budget ]]; then
  echo "budget.sh: test '$name' ran past its budget of ${budget}s and was stopped after ${elapsed}s;" \
    "make it faster or split it (the budget is PADDLE_IMAGE_TEST_BUDGET)" >&2
  exit 124
fi
exit "$rc"
