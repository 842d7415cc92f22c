#!/usr/bin/env bash
# Proves tests/support/budget.sh stops a test that runs past its budget with a message
# naming the test and the budget, passes a quick one's exit status through, records
# times, and refuses a budget that is not a number.
set -uo pipefail
B="$(dirname "$0")/budget.sh"
failed=0
ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; failed=1; }
times=$(mktemp)
trap 'rm -f "$times" "$times.err"' EXIT

start=$SECONDS
PADDLE_IMAGE_TEST_BUDGET=1 PADDLE_IMAGE_TEST_TIMES=$times "$B" slow.test sleep 30 2>"$times.err"
rc=$?
[[ $rc -eq 124 ]] && ok "a test past its budget fails (exit 124)" || bad "exit $rc, wanted 124"
grep -q "test 'slow.test' ran past its budget of 1s" "$times.err" && ok "the message names the test and the budget" ||
  bad "message: $(cat "$times.err")"
((SECONDS - start < 10)) && ok "it is stopped, not waited for" || bad "took $((SECONDS - start))s"
grep -q '^slow.test [0-9]* 124 [0-9]* [0-9]* [0-9]*$' "$times" && ok "its time and CPU seconds are recorded" || bad "times: $(cat "$times")"

PADDLE_IMAGE_TEST_BUDGET=60 PADDLE_IMAGE_TEST_TIMES=$times "$B" quick.test bash -c 'exit 3' 2>"$times.err"
rc=$?
[[ $rc -eq 3 ]] && ok "a quick test's own exit status passes through" || bad "exit $rc, wanted 3"
[[ ! -s $times.err ]] && ok "no budget message for a quick test" || bad "message: $(cat "$times.err")"
grep -q '^quick.test 0 3 [0-9]* [0-9]* [0-9]*$' "$times" && ok "its time and CPU seconds are recorded" || bad "times: $(cat "$times")"

# The CPU seconds are the test's processes', not the wall time: a test that burns 2 s of
# CPU records 2-3 of them. The loop counts its own CPU time, not the clock, because the
# selftest shares the cores with other tests: a 2 s wall-clock loop got less than half a
# CPU second, recorded 0, in a run six tests wide.
: >"$times"
PADDLE_IMAGE_TEST_TIMES=$times "$B" busy.test python3 -c '
import time
end = time.process_time() + 2
while time.process_time() < end:  # a system call: asked once per 200,000 turns
    for _ in range(200000):
        pass'
read -r cpu user sys < <(awk '$1 == "busy.test" {print $4, $5, $6}' "$times")
[[ ${cpu:-0} -ge 2 && ${cpu:-0} -le 3 ]] && ok "a busy test's CPU seconds are counted" || bad "times: $(cat "$times")"
# A loop in user space: its seconds are user time, and the two parts add up (each rounded).
[[ ${user:-0} -ge 2 && ${sys:-9} -le 1 && $((user + sys - cpu)) -ge -1 && $((user + sys - cpu)) -le 1 ]] &&
  ok "the user and system seconds are recorded apart" || bad "times: $(cat "$times")"
PADDLE_IMAGE_TEST_BUDGET=ten "$B" x true 2>"$times.err"
rc=$?
[[ $rc -eq 2 ]] && grep -q "not a whole number" "$times.err" && ok "a bad budget is refused" || bad "exit $rc: $(cat "$times.err")"
exit $failed
