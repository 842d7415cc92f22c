#!/usr/bin/env bash
# Keeps the module edges honest: library headers only where the design allows them.
set -euo pipefail
root=$1
bad=0
rule() { # PATTERN ALLOWED_DIR_REGEX DESCRIPTION
  local hits
  hits=$(cd "$root" && grep -rlE "$1" --include='*.cpp' --include='*.hpp' util oci layers registry spec compat_matrix builder doctor cli 2>/dev/null |
    grep -vE "^($2)/" || true)
  if [[ -n "$hits" ]]; then
    echo "FAIL - $3: $hits"; bad=1
  else
    echo "ok - $3"
  fi
}
rule '#include <archive' 'layers' "only layers/ includes libarchive"
rule '#include <curl/' 'registry' "only registry/ includes curl"
rule '#include <openssl/(ec|rsa|pem|x509)' 'signing' "only signing/ uses OpenSSL signature APIs"
rule '#include <openssl/' 'util|signing' "only util/ (digests) and signing/ include OpenSSL"
rule '#include <yaml-cpp' 'spec|compat_matrix' "only spec/ and compat_matrix/ include yaml-cpp"
rule '#include "cli/' 'cli' "nothing below cli/ includes cli/"
rule '#include "builder/' 'builder|cli' "only cli/ depends on builder/"
rule 'std::getenv|getenv\(' 'cli' "only cli/ reads the environment"
rule 'std::cout|printf\(' 'cli' "only cli/ writes to stdout"
[[ $bad -eq 0 ]] && echo "include edges: 9 passed, 0 failed"
exit $bad
