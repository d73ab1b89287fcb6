#!/usr/bin/env bash
# Installs every Debian 12 package ddp-launch needs to build, test, run the demo and
# the benchmarks. Idempotent: installs only what is missing; safe to run again.
# Needs root (or sudo). Usage: scripts/install-deps.sh
# (scripts/lib.sh's need names these packages for missing tools; tests/scripts/lib_test.sh
# checks that each one it names is listed here.)
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libcli11-dev libfmt-dev catch2 nlohmann-json3-dev
  libtorch-dev libgloo-dev libopenblas0-pthread
  python3-torch python3-numpy
  iproute2 iputils-ping procps time
  elfutils gdb
  slurm-wlm munge
  gnuplot-nox
  clang-format                                # scripts/check-format.sh (CI fails on an unformatted file)
  libssl-dev openssl etcd-server etcd-client  # etcd rendezvous: TLS client, tests' real etcd and CA
  prometheus chromium                         # the status endpoint's tests: promtool, a real server, headless Chromium
  openmpi-bin                                 # the compat: mpirun test (one ddp-launch per MPI task)
  openssh-client openssh-server pdsh          # many-host launches: tests/hosts (real sshd per namespace), bench-hosts
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
