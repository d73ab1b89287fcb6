#!/usr/bin/env bash
# Runs multinode_tests' hidden [gloo] cases (real gloo workers) when PYTHON has torch;
# otherwise says why and exits 77, which CTest reports as skipped.
# Usage: run_gloo_cases.sh PYTHON MULTINODE_TESTS
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
python=$1 tests=$2
if ! "$python" -c 'import torch.distributed' 2>/dev/null; then
  skip "$python cannot import torch.distributed (set -DDDP_TEST_PYTHON=/path/to/python-with-torch)"
fi
DDP_TEST_PYTHON=$python exec "$tests" '[gloo]'
