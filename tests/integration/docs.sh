#!/usr/bin/env bash
# Keeps the documentation true where a machine can tell: every command in the README's
# usage block exists, every flag the flag tables of docs/registry.md, docs/resolve.md,
# docs/signing.md and docs/warm.md list is accepted by the commands they name, and no
# page still says that a working feature is refused or comes later.
source "$(dirname "$0")/../support/common.sh"
cd "$ROOT"

# README usage block: `paddle-image CMD [SUB] ...` lines.
while read -r cmd sub; do
  if [[ "$sub" =~ ^[a-z]+$ ]] && "$PI" "$cmd" "$sub" --help >/dev/null 2>&1; then
    pass "README: paddle-image $cmd $sub exists"
  elif "$PI" "$cmd" --help >/dev/null 2>&1; then
    pass "README: paddle-image $cmd exists"
  else
    fail "README names 'paddle-image $cmd', which does not exist"
  fi
done < <(awk '/^```sh/{on=1; next} /^```/{on=0} on && $1 == "paddle-image" {print $2, $3}' README.md | sort -u)

# Flag tables: | `--flag ...` | cmd, cmd | meaning |
flag_table() { # FILE DEFAULT_COMMAND
  python3 - "$1" "$2" <<'PY'
import re, sys
path, default = sys.argv[1], sys.argv[2]
everything = ["push", "pull", "copy", "build", "inspect", "tags", "login"]  # "all" (the page says which)
for line in open(path):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 2 or not cells[0].startswith("`-"):
        continue
    flags = re.findall(r"(--[a-z][a-z0-9-]*)", cells[0])
    where = cells[1] if len(cells) >= 3 and re.fullmatch(r"[a-z, ]+", cells[1]) else default
    cmds = everything if where == "all" else [c.strip() for c in where.split(",")]
    for f in flags:
        for c in cmds:
            print(c, f)
PY
}
# (the help is read whole before grep: `--help | grep -q` fails under pipefail when grep
# exits at its first match and paddle-image then gets SIGPIPE)
while read -r cmd flag; do
  if grep -q -- "$flag\b" <<<"$("$PI" "$cmd" --help 2>/dev/null)"; then
    pass "docs/registry.md: $cmd takes $flag"
  else
    fail "docs/registry.md lists $flag for '$cmd', which does not take it"
  fi
done < <(flag_table docs/registry.md push)
while read -r _ flag; do
  if grep -q -- "$flag\b" <<<"$("$PI" resolve --help 2>/dev/null)"; then
    pass "docs/resolve.md: resolve takes $flag"
  else
    fail "docs/resolve.md lists $flag, which resolve does not take"
  fi
done < <(flag_table docs/resolve.md resolve)
n=0
while read -r cmd flag; do
  n=$((n + 1))
  if grep -q -- "$flag\b" <<<"$("$PI" $cmd --help 2>/dev/null)"; then
    pass "docs/registry-cache.md: $cmd takes $flag"
  else
    fail "docs/registry-cache.md lists $flag for '$cmd', which it does not take"
  fi
done < <(flag_table docs/registry-cache.md build)
((n == 4)) || fail "docs/registry-cache.md's flag table lists $n flags, expected 4"
# docs/signing.md: one flag table per command, under "### <heading>".
while IFS='|' read -r heading cmd; do
  n=0
  while read -r _ flag; do
    n=$((n + 1))
    if grep -q -- "$flag\b" <<<"$("$PI" $cmd --help 2>/dev/null)"; then
      pass "docs/signing.md: $cmd takes $flag"
    else
      fail "docs/signing.md lists $flag for '$cmd', which does not take it"
    fi
  done < <(flag_table <(awk -v h="### $heading" '$0 == h {on=1; next} /^##/ {on=0} on' docs/signing.md) -)
  ((n > 0)) || fail "docs/signing.md has no flag table under '### $heading'"
done <<'EOF'
key generate|key generate
sign|sign
attest|attest
verify|verify
sbom|sbom
attest-blob|attest-blob
verify-blob-attestation|verify-blob-attestation
build --sign|build
EOF

# docs/warm.md: one flag table per command, under the "## " heading that names it.
while IFS='|' read -r heading cmd; do
  n=0
  while read -r _ flag; do
    n=$((n + 1))
    if grep -q -- "$flag\b" <<<"$("$PI" $cmd --help 2>/dev/null)"; then
      pass "docs/warm.md: $cmd takes $flag"
    else
      fail "docs/warm.md lists $flag for '$cmd', which does not take it"
    fi
  done < <(flag_table <(awk -v h="$heading" 'index($0, "## ") == 1 && index($0, h) {on=1; next} /^##/ {on=0} on' docs/warm.md) -)
  ((n > 0)) || fail "docs/warm.md has no flag table under the heading naming $heading"
done <<'EOF'
`warm plan`|warm plan
`warm push --to`|warm push
`warm push --through`|warm push
`warm export`|warm export
`warm hosts`|warm hosts
`warm verify`|warm verify
`warm manifests`|warm manifests
EOF

# Claims that went stale once the features were built.
check "no page says a built feature is refused or comes later" bash -c \
  "! grep -rn -i -E 'refused for now|comes later|not supported yet|pulling comes with|pushing comes with|doctor .*not built' docs README.md"

finish
