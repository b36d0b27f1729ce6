#!/usr/bin/env bash
# The one place packages are installed (Debian 12). Installs only what is missing, so a machine
# that has everything costs one dpkg-query and no apt-get at all.
# Usage: scripts/deps.sh [--fuzz]     --fuzz adds clang and libFuzzer for the fuzz targets.
set -euo pipefail

packages=(
  build-essential           # g++ 12, make
  cmake
  ccache
  pkg-config
  libboost1.81-dev          # Asio, System (header-only) and the other Boost headers
  libboost-test1.81-dev     # Boost.Test, shared library
  libfmt-dev
  libssl-dev
  redis-server              # the tests start their own servers on free ports; the system one is unused
  redis-tools               # redis-cli, redis-benchmark
  redis-sentinel
)
for arg in "$@"; do
  case $arg in
    --fuzz) packages+=(clang libclang-rt-dev) ;;
    *) echo "usage: $0 [--fuzz]" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "deps.sh: installing ${missing[*]}" >&2
if ((EUID == 0)); then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "deps.sh: not root and no sudo; please install: ${missing[*]}" >&2
  exit 1
fi
# Wait for a concurrent apt/dpkg (another checkout running this script) rather than fail.
apt_opts=(-o DPkg::Lock::Timeout=600)
"${sudo[@]}" apt-get "${apt_opts[@]}" update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}"
