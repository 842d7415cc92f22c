#!/usr/bin/env bash
# Restructuring changes no output: tests/support/same-outputs.sh runs its jobs (builds
# on scratch and on a Paddle-shaped base, split layers, registry-cache entries, push,
# pull and copy, oci- and docker-archives, renders, warm export and mirror, doctor,
# signing) with this tree's binary and with the pinned older one below, built here from
# its commit, and compares every file both wrote. The pin moves only with a change that
# is meant to change an output; the commit that moves it says what changed.
source "$(dirname "$0")/../support/common.sh"
# The pin (tests/support/same-outputs.pin; scripts/test.sh builds its binary as a build
# stage, with the others, so this test only runs it).
read -r PINNED _ <"$SUPPORT/same-outputs.pin" # REV, then what changed at it
rc=0
SAME_OUTPUTS_OLD_DIR=$ROOT/build/same-outputs-old TMPDIR=$WORK \
  bash "$SUPPORT/same-outputs.sh" --rev "$PINNED" "$PI" >"$WORK/same.out" 2>&1 || rc=$?
cat "$WORK/same.out"
check "every file written by $PINNED's binary and this one is byte-identical (exit $rc)" test "$rc" -eq 0
check "... and they wrote many" bash -c "grep -Eq 'the ([0-9]{3,}) files both binaries wrote are byte-identical' '$WORK/same.out'"
finish
