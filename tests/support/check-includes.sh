#!/usr/bin/env bash
# Keeps the I/O edges honest: only cli/ touches the environment and stdout.
set -euo pipefail
root=$1
bad=0
rule() { # PATTERN ALLOWED_DIR_REGEX DESCRIPTION
  local hits
  hits=$(cd "$root" && grep -rlE "$1" --include='*.cpp' --include='*.hpp' util oci layers registry imageio python spec compat_matrix templates builder doctor cli 2>/dev/null |
    grep -vE "^($2)/" || true)
  if [[ -n "$hits" ]]; then
    echo "FAIL - $3: $hits"; bad=1
  else
    echo "ok - $3"
  fi
}
# Which module may include which (and which library) is the allowed-dependency map,
# tests/support/deps.txt, checked by check-deps.py. What an include cannot show:
rule 'std::getenv|getenv\(' 'cli' "only cli/ reads the environment"
rule 'std::cout|printf\(' 'cli' "only cli/ writes to stdout"
rule 'EVP_(DigestSign|DigestVerify|PKEY_sign|PKEY_verify)|ECDSA_' 'signing' "only signing/ calls OpenSSL signature APIs"
[[ $bad -eq 0 ]] && echo "io edges: 3 passed, 0 failed"
exit $bad
