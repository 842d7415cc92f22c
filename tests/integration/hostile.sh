#!/usr/bin/env bash
# Hostile values in every variable of every rendered file (issue: one escaper per
# target format): tests/support/hostile_render.py renders render github-actions,
# gitlab-ci, dockerfile, k8s-job, paddle-distributed, warm manifests, warm hosts, init
# and init --from-dockerfile with line breaks of every kind, NUL, quotes, comment and
# mapping characters, mustache and GitHub expression braces, shell substitutions that
# plant a file, YAML 1.1 scalars and very long strings in each slot; each output must be
# refused (exit 2/3) or parse with PyYAML (YAML 1.1) and ruamel.yaml (1.2) alike,
# tomllib, and buildah (Dockerfiles, built from scratch, configs compared), keep the
# benign render's structure with the value exactly where the benign one was, validate
# as Kubernetes objects, and plant nothing when its CI steps run under bash.
#   hostile.sh [FAMILY]   one family of slots (ci, dockerfile, k8s, warm, init; CTest runs
#                         each as integration.hostile.FAMILY), or every slot
FAMILY=${1:-}
source "$(dirname "$0")/../support/common.sh"
# shellcheck source=../support/registry/registry.sh
source "$SUPPORT/registry/registry.sh"
trap registry_stop_all EXIT
cd "$WORK"
args=(--pi "$PI" --work "$WORK/runs")
[[ -z $FAMILY ]] || args+=(--family "$FAMILY")
# Only warm manifests push to a registry.
if [[ -z $FAMILY || $FAMILY == warm ]]; then
  registry_start reg open "$WORK/srv"
  args+=(--registry "$REG_HOST")
fi
if [[ -n $FAMILY && $FAMILY != dockerfile ]]; then
  : # only the Dockerfile slots are built
elif command -v buildah >/dev/null && [[ $(id -u) -eq 0 ]]; then
  args+=(--buildah)
else
  echo "note: without buildah and root the rendered Dockerfiles are parsed, not built"
fi
# buildah keeps some state under /var/lib/containers whatever --root says: the run gets
# a private overlay of /var/lib (as templates.sh does), so the machine's stays untouched.
mkdir -p bah/up bah/wk bah/containers bah/tmp
printf 'unqualified-search-registries = []\n' >bah/registries.conf
# shellcheck disable=SC2016  # expanded by the inner bash
check "every hostile value round-trips or is refused in every slot" \
  env CONTAINERS_REGISTRIES_CONF="$WORK/bah/registries.conf" TMPDIR="$WORK/bah/tmp" \
  unshare --mount --propagation private bash -c 'mount -t overlay overlay \
    -o "lowerdir=/var/lib,upperdir=$1/up,workdir=$1/wk" /var/lib && mkdir -p /var/lib/containers &&
    mount --bind "$1/containers" /var/lib/containers && shift && exec /usr/bin/python3 "$@"' _ "$WORK/bah" \
  "$SUPPORT/hostile_render.py" "${args[@]}"
cp "$WORK/check.log" run.log
cat run.log
check "the run covered every slot (warm manifests with the registry)" bash -c "! grep -q 'skipped' run.log"
if [[ " ${args[*]} " == *" --buildah "* ]]; then
  check "and built the rendered Dockerfiles with buildah" grep -q '^buildah built [1-9]' run.log
fi
finish
