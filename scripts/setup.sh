#!/usr/bin/env bash
# Installs the Debian 12 packages smartgen needs to build, test, benchmark and plot.
# Idempotent: installs only what is missing. Fails loudly (non-zero exit, named package) when a
# package cannot be installed. Nothing is downloaded except Debian packages.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libpcre2-dev libxxhash-dev libucx-dev ucx-utils libopenblas-dev libcpp-httplib-dev libssl-dev
  zlib1g-dev iproute2 iperf3 curl procps openssl
  clang-14 libclang-rt-14-dev
  python3 python3-matplotlib
  prometheus  # promtool: the metrics tests check every /metrics endpoint with it (~20 s install)
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "setup: missing packages: ${missing[*]}" >&2
    echo "setup: not root and no sudo; install them as root and re-run" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"

for pkg in "${missing[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    echo "setup: package '$pkg' failed to install" >&2
    exit 1
  fi
done
echo "setup: done"
