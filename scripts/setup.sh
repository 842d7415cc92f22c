#!/usr/bin/env bash
# Installs everything paddle-image needs to build and test, from Debian's packages.
# Idempotent: packages already present are not touched; apt-get runs only when
# something is missing. Usage: scripts/setup.sh [--example | --test]
# (--example: what scripts/example.sh needs to make a Debian base and run the image on
# it; --test: every test tool, those included)
set -euo pipefail

BUILD_PKGS=(build-essential cmake ninja-build pkg-config git
  libcurl4-openssl-dev libssl-dev libarchive-dev nlohmann-json3-dev libyaml-cpp-dev
  libcli11-dev doctest-dev libzstd-dev zlib1g-dev libtomlplusplus-dev libsodium-dev
  libkainjow-mustache-dev ccache apt gpgv)
TEST_PKGS=(umoci skopeo runc podman debootstrap python3 python3-dev python3-pip python3-pip-whl
  python3-wheel python3-setuptools python3-yaml python3-ruamel.yaml zstd pigz strace clang-format clang-tidy clang libclang-rt-14-dev time busybox-static
  docker-registry containerd apache2-utils python3-cryptography python3-nacl python3-jsonschema openssl curl buildah
  iproute2 e2fsprogs zsh fish man-db groff-base lintian dpkg-dev gpg gpg-agent apt-utils xz-utils debian-archive-keyring)

EXAMPLE_PKGS=(debootstrap umoci runc python3)

want=("${BUILD_PKGS[@]}")
if [[ "${1:-}" == "--test" ]]; then
  want+=("${TEST_PKGS[@]}")
elif [[ "${1:-}" == "--example" ]]; then
  want+=("${EXAMPLE_PKGS[@]}")
fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#want[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
