#!/usr/bin/env bash
# The README's test command: installs what is missing (scripts/install-deps.sh: Debian's
# packages and torch 2.x in its virtual environment), configures and builds everything (Release,
# Ninja) into BUILD_DIR against torch 2.x's LibTorch (its CUDA build: the NCCL/CUDA code compiles
# and links; only running it needs a GPU), runs every test with CTest, then the legacy leg: libddp,
# its runtime tests, the workers' store with torch 1.13's clients and Python 1.13 workers under
# the launcher, built against Debian's torch 1.13 in BUILD_DIR-torch1.13.
# Env: BUILD_DIR (scripts/lib.sh, default build), DDP_WARNINGS_AS_ERRORS (ON in CI), DDP_SANITIZE,
# CTEST_ARGS (both legs), DDP_LEGACY_LEG (1; 0 skips it).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
scripts/install-deps.sh
build=${build_dir#"$repo_root/"}
# ccache: the legacy leg's launcher objects (no torch in them) are the first leg's, and a rerun
# (CI, a second clone) compiles only what changed. Paths are taken relative to the repository,
# so two build folders and two clones share entries.
export CCACHE_BASEDIR=$repo_root
configure() {  # DIR TORCH_PYTHON
  cmake -S . -B "$1" -G Ninja -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DDDP_TORCH_PYTHON="$2" \
    -DDDP_WARNINGS_AS_ERRORS="${DDP_WARNINGS_AS_ERRORS:-OFF}" -DDDP_SANITIZE="${DDP_SANITIZE:-}"
}
configure "$build" "$torch_python"
cmake --build "$build" -j "$(nproc)"
status=0
# shellcheck disable=SC2086
(cd "$build" && ctest --output-on-failure --timeout 600 ${CTEST_ARGS:-}) || status=$?

if [[ ${DDP_LEGACY_LEG:-1} != 0 ]]; then
  echo "test.sh: the legacy leg: torch 1.13 (Debian's libtorch-dev and python3-torch)"
  legacy=$build-torch1.13
  configure "$legacy" "$legacy_python"
  cmake --build "$legacy" -j "$(nproc)" -- launcher/all tests/support/all tests/c10d/all tests/python/all \
    tests/runtime/all trainers/all
  # shellcheck disable=SC2086
  (cd "$legacy" && ctest --output-on-failure --timeout 600 -R "$legacy_tests" ${CTEST_ARGS:-}) || status=$?
fi
exit "$status"
