# shellcheck shell=bash
# scripts/lib.sh: the helpers that every script in scripts/ and every shell test in tests/
# sources (it is never run): die, fail, skip, need, bench_python, use_bench_python,
# need_bench_peers, free_port, median, and the one rule for the build folder (repo_root,
# build_dir). Sourcing it defines functions, those two variables and the torch_*, legacy_* ones below,
# nothing else: the caller's shell options (set -euo pipefail) stay its own.
#
#   # shellcheck source=SCRIPTDIR/lib.sh      (from tests/X/: SCRIPTDIR/../../scripts/lib.sh)
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# The build folder: BUILD_DIR, default build/ at the repository root; a relative BUILD_DIR
# is taken from the repository root, wherever the script runs from. build_dir is that
# folder's absolute path. Every script builds into it and runs its binaries from it. A
# script that needs an extra CMake option configures that same folder with the option
# added (bench-store.sh: -DDDP_BUILD_BENCH=ON, which stays in the folder's cache: later
# builds there also build bench/). The one build that cannot share it, gpu-check.sh's
# against a CUDA LibTorch, lives in $build_dir/gpu. scripts/slurm.sbatch runs as Slurm's
# copy of it, away from the checkout, so it cannot source this file: it spells the same
# default out (./${BUILD_DIR:-build}/ from the submit directory, the repository root).
#
# Exit codes: die 2 unless given one (each script keeps its own: plot.sh 2, run-node.sh
# 121, ...), fail 1 (a test's mismatch), skip 77 (CTest's SKIP_RETURN_CODE).

# shellcheck disable=SC2034  # repo_root and build_dir are for the sourcing scripts
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck disable=SC2034
build_dir=${BUILD_DIR:-build}
[[ $build_dir == /* ]] || build_dir=$repo_root/$build_dir

# The torch the project builds, tests and benchmarks against (the one place its version is
# written): PyPI's torch wheel, in a virtual environment of Debian's python3 that
# scripts/install-deps.sh makes. DDP_TORCH_VENV moves it. torch_python is its interpreter; the
# legacy leg's is Debian's /usr/bin/python3 with python3-torch 1.13 (legacy_python).
# shellcheck disable=SC2034
torch_version=2.15.0
# shellcheck disable=SC2034
torch_venv=${DDP_TORCH_VENV:-/opt/ddp-launch/torch-$torch_version}
# shellcheck disable=SC2034
torch_python=$torch_venv/bin/python
# shellcheck disable=SC2034
legacy_python=/usr/bin/python3
# The tests the legacy leg runs (scripts/test.sh): the workers' store with 1.13's clients, Python
# 1.13 workers under the launcher, libddp and its runtime tests against LibTorch 1.13.
# shellcheck disable=SC2034
legacy_tests='^(c10d-compatible store|worker store|python\.|runtime)'

# die [STATUS] MESSAGE: MESSAGE on stderr after $die_prefix (default "SCRIPT: ", the
# script's file name), then exit STATUS (default 2). Quote the message: a first word of
# digits among several is taken as the status.
die() {
  local status=2
  if (($# > 1)) && [[ $1 =~ ^[0-9]+$ ]]; then
    status=$1
    shift
  fi
  echo "${die_prefix-${0##*/}: }$*" >&2
  exit "$status"
}

# fail MESSAGE: a test's verdict, "FAIL: MESSAGE" on stderr (it may be called inside
# $(...)), exit 1.
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# skip MESSAGE: a test that cannot run here says why ("SKIP: MESSAGE") and exits 77, which
# CTest reports as skipped where the test has SKIP_RETURN_CODE 77.
skip() {
  echo "SKIP: $*"
  exit 77
}

# expect_usage_error SCRIPT SCRATCH WHAT PATTERN [ARGS...]: a benchmark's test asserts that
# SCRIPT ARGS rejects its usage as the scripts do: exit 2 and one stderr line containing PATTERN
# (else fail, naming WHAT). SCRATCH: a folder for the output.
expect_usage_error() {
  local script=$1 scratch=$2 what=$3 pattern=$4 rc=0
  shift 4
  "$script" "$@" >"$scratch/out" 2>"$scratch/err" || rc=$?
  ((rc == 2)) || fail "$what: exit $rc, expected 2 ($(cat "$scratch/err"))"
  grep -q -- "$pattern" "$scratch/err" || fail "$what: stderr lacks '$pattern': $(cat "$scratch/err")"
  (($(wc -l <"$scratch/err") == 1)) || fail "$what: expected one error line: $(cat "$scratch/err")"
}

# debian_package TOOL: the Debian package scripts/install-deps.sh installs TOOL from; empty
# for a tool it does not install. (tests/scripts/lib_test.sh checks each is in its list.)
debian_package() {
  case ${1##*/} in
    cmake | ctest) echo cmake ;;
    ninja) echo ninja-build ;;
    c++ | g++ | gcc | make) echo build-essential ;;
    pkg-config) echo pkg-config ;;
    ip | ss | tc) echo iproute2 ;;
    ping) echo iputils-ping ;;
    ps | pgrep | pkill) echo procps ;;
    time) echo time ;;
    eu-stack) echo elfutils ;;
    gdb) echo gdb ;;
    sbatch | srun | scancel | sinfo | squeue | scontrol | slurmctld | slurmd) echo slurm-wlm ;;
    munged) echo munge ;;
    gnuplot) echo gnuplot-nox ;;
    clang-format) echo clang-format ;;
    ctags) echo universal-ctags ;;
    openssl) echo openssl ;;
    etcd) echo etcd-server ;;
    etcdctl) echo etcd-client ;;
    mpirun) echo openmpi-bin ;;
    ssh | ssh-keygen) echo openssh-client ;;
    sshd) echo openssh-server ;;
    pdsh) echo pdsh ;;
  esac
}

# need [STATUS] TOOL...: returns when every TOOL is a command (a name on PATH or a path:
# /usr/bin/time, not the shell's `time`); otherwise one line naming the missing tools and
# their Debian packages, then exit STATUS (default 2; 77 skips the test, through skip).
need() {
  local status=2 tool package missing=() packages=() unknown=()
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    status=$1
    shift
  fi
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 && continue
    missing+=("$tool")
    package=$(debian_package "$tool")
    if [[ -z $package ]]; then
      unknown+=("$tool")
    elif [[ " ${packages[*]} " != *" $package "* ]]; then
      packages+=("$package")
    fi
  done
  ((${#missing[@]} > 0)) || return 0
  local names message them=it s=""
  names=$(printf '%s, ' "${missing[@]}")
  message="${names%, } not found"
  if ((${#packages[@]} > 0)); then
    ((${#missing[@]} - ${#unknown[@]} == 1)) || them=them
    ((${#packages[@]} == 1)) || s=s
    names=$(printf '%s, ' "${packages[@]}")
    message+="; install $them with scripts/install-deps.sh (Debian package$s ${names%, })"
  fi
  if ((${#unknown[@]} > 0)); then
    names=$(printf '%s, ' "${unknown[@]}")
    message+=" (scripts/install-deps.sh does not install ${names%, })"
  fi
  ((status == 77)) && skip "$message"
  die "$status" "$message"
}

# bench_python: prints the Python the benchmarks run their Python peers with (torchrun, Python
# DDP): PYTHON when set (PYTHON=/usr/bin/python3: the legacy leg's torch 1.13), else the torch
# venv's, $torch_python. The tests that smoke-run a benchmark check this one for torch.
bench_python() {
  echo "${PYTHON:-$torch_python}"
}

# use_bench_python: sets python to bench_python's, python_torch to its torch's version (e.g.
# 2.15.0+cu132) and the array torchrun to the command that runs that torch's torchrun:
#   torch >= 2:  "$python" -m torch.distributed.run
#   torch 1.x:   "$python" bench/peers/torchrun_fixed.py   (1.13's, its Python 3.11 bug fixed)
# Dies (2) when that Python cannot import torch. The Python drivers that take --torchrun
# apply the same rule (scripts/bench_records.py: torchrun_argv).
use_bench_python() {
  python=$(bench_python)
  # shellcheck disable=SC2034  # python_torch and torchrun are for the sourcing scripts
  python_torch=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null) || {
    if [[ -z ${PYTHON:-} ]]; then
      die "$python with torch not found: run scripts/install-deps.sh (torch $torch_version in $torch_venv), or set PYTHON to a Python with torch"
    fi
    die "PYTHON=$python cannot import torch: point PYTHON at a Python with torch (default $torch_python)"
  }
  if [[ ${python_torch%%.*} =~ ^[0-9]+$ ]] && ((${python_torch%%.*} >= 2)); then
    torchrun=("$python" -m torch.distributed.run)
  else
    # shellcheck disable=SC2034
    torchrun=("$python" "$repo_root/bench/peers/torchrun_fixed.py")
  fi
}

# need_bench_peers: what the benchmarks that run beside the Python peers need: use_bench_python
# (python, python_torch, torchrun; dies without torch), and ddp-launch and train in $build_dir
# (configured and built when missing). Changes to the repository root.
need_bench_peers() {
  use_bench_python
  cd "$repo_root" || die "cannot cd to $repo_root"
  if [[ ! -x $build_dir/launcher/ddp-launch || ! -x $build_dir/trainers/train ]]; then
    [[ -f $build_dir/CMakeCache.txt ]] || cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build_dir" --target ddp-launch train >/dev/null
  fi
}

# free_port [N]: N (default 1) distinct TCP ports free on this machine right now, below the
# kernel's ephemeral range, on one line, blank-separated (all bound at once, then released:
# another process may still take one; tests/support/ports.py says why below that range).
# shellcheck disable=SC2120  # N is optional
free_port() {
  python3 "$repo_root/tests/support/ports.py" "${1:-1}"
}

# median [NUMBER...]: the median of the numbers given (or of stdin's lines, blank ones
# skipped), compared as numbers (1e3 > 999 > 10 > 9); an odd count prints the middle value
# as written, an even count the mean of the two middle ones (%.15g). Nothing or a word that
# is not a number: a message on stderr, status 2.
median() {
  local values
  if (($#)); then values=$(printf '%s\n' "$@"); else values=$(cat); fi
  LC_ALL=C sort -g <<<"$values" | LC_ALL=C awk '
    { gsub(/^[ \t]+|[ \t]+$/, "") }
    $0 == "" { next }
    $0 !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ { bad = $0; exit }
    { v[n++] = $0 }
    END {
      if (bad != "") { printf "median: not a number: \"%s\"\n", bad > "/dev/stderr"; exit 2 }
      if (n == 0) { print "median: no numbers" > "/dev/stderr"; exit 2 }
      if (n % 2) print v[int(n / 2)]
      else printf "%.15g\n", (v[n / 2 - 1] + v[n / 2]) / 2
    }'
}
