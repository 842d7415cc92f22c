#!/usr/bin/env bash
# same-outputs.sh skips building the pinned binary when it trusts that nothing the
# binary is built from differs (--sources-equal). Where that trust would be wrong, it
# must build: in a throwaway clone, an uncommitted edit of a source file, a committed
# one, a CMakeLists.txt edit and a new file added to git all count as different; edits
# of tests/, docs/, scripts/ and the top-level pages do not.
set -euo pipefail
SUPPORT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SUPPORT/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/same-outputs-selftest.XXXXXX")
trap 'rm -rf "$T"' EXIT
git clone -q --shared "$ROOT" "$T/c"
cd "$T/c"
S=tests/support/same-outputs.sh
cp "$ROOT/$S" "$S" # this tree's script, committed or not
git -c user.name=t -c user.email=t@t commit -q --allow-empty -am base
fails=0
expect() { # WANT(equal|differs) WHAT
  local got=equal
  bash "$S" --sources-equal HEAD || got=differs
  if [[ $got == "$1" ]]; then echo "ok - $2: $got"; else echo "FAIL - $2: $got, want $1"; fails=$((fails + 1)); fi
  git checkout -q -- . && git clean -qfd
}
expect equal "the tree as committed"
echo "# x" >>docs/spec.md && expect equal "an edit of docs/"
echo "# x" >>tests/CMakeLists.txt && expect equal "an edit of tests/"
echo "# x" >>scripts/build.sh && expect equal "an edit of scripts/"
echo "x" >>README.md && expect equal "an edit of a top-level page"
echo "// x" >>util/error.cpp && expect differs "an uncommitted edit of a source file"
echo "# x" >>util/CMakeLists.txt && expect differs "an edit of a module's CMakeLists.txt"
echo "# x" >>CMakeLists.txt && expect differs "an edit of the top CMakeLists.txt"
echo "x" >new.cpp && git add new.cpp && expect differs "a new file added to git"
echo "// x" >>util/error.cpp && git -c user.name=t -c user.email=t@t commit -qam edit
if bash "$S" --sources-equal HEAD~1; then echo "FAIL - a committed edit against the commit before"; fails=$((fails + 1)); else
  echo "ok - a committed edit against the commit before: differs"; fi
exit $((fails > 0))
