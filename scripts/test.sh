#!/usr/bin/env bash
# The README's test command: installs missing packages, configures and builds everything
# (Release, Ninja) into BUILD_DIR, then runs every test with CTest.
# Env: BUILD_DIR (scripts/lib.sh, default build), DDP_WARNINGS_AS_ERRORS (ON in CI), DDP_SANITIZE,
# CTEST_ARGS.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
scripts/install-deps.sh
build=${build_dir#"$repo_root/"}
cmake -S . -B "$build" -G Ninja \
  -DDDP_WARNINGS_AS_ERRORS="${DDP_WARNINGS_AS_ERRORS:-OFF}" \
  -DDDP_SANITIZE="${DDP_SANITIZE:-}"
cmake --build "$build" -j "$(nproc)"
cd "$build"
# shellcheck disable=SC2086
ctest --output-on-failure --timeout 600 ${CTEST_ARGS:-}
