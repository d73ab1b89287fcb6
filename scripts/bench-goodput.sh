#!/usr/bin/env bash
# bench-goodput.sh: how much training survives a SIGKILL of a random worker every 10 s (a
# benchmark, not a test). Per configuration a fault-free and a faulty run of the same length,
# back to back, configurations alternating: torchrun + the tutorial-style Python script
# (rank-0 torch.save every 100 steps), ddp-launch + that script with python/ddp_snapshot.py,
# ddp-launch + train --snapshot-every 1, and train at the interval a short sweep picks; plus
# the fault-free floors without checkpoints or snapshots and train --bench's snapshot overhead.
# Reports goodput, steps redone per failure and failure -> first step, as markdown (~15 min
# with the defaults). Builds ddp-launch and train into BUILD_DIR if missing.
#
#   scripts/bench-goodput.sh [--duration S] [--fault-every S] [--seed N] [--rounds N]
#                            [--sweep LIST] [--sweep-duration S] [--py-snapshot-every N]
#                            [--overhead-runs N] [--overhead-steps N] [--launchers torchrun,ddp]
#
# Defaults: --duration 60, --fault-every 10, --seed 1, --rounds 1, --sweep 1,5,10,25,50,
# --sweep-duration 30, --py-snapshot-every 0 (the sweep's pick), --overhead-runs 3,
# --overhead-steps 200, --launchers torchrun,ddp (scripts/bench_goodput.py --help says more).
# Env: BUILD_DIR (scripts/lib.sh); PYTHON (the peers' Python, default the torch venv's: its
# torchrun, `-m torch.distributed.run`; PYTHON=/usr/bin/python3 for Debian's 1.13 through
# bench/peers/torchrun_fixed.py).
# Exit: 0; 1 when a run failed (listed under the tables); 2 on bad usage or a missing tool.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
args=()
while (($#)); do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --duration | --fault-every | --seed | --rounds | --sweep | --sweep-duration | --py-snapshot-every | \
      --overhead-runs | --overhead-steps | --launchers)
      (($# >= 2)) || die "$1 needs a value; see scripts/bench-goodput.sh --help"
      args+=("$1" "$2")
      shift 2
      ;;
    *) die "unknown argument '$1'; see scripts/bench-goodput.sh --help" ;;
  esac
done
need_bench_peers  # python (PYTHON or the torch venv's) and its torchrun; ddp-launch and train built; cd to the repository
exec "$python" scripts/bench_goodput.py --ddp-launch "$build_dir/launcher/ddp-launch" \
  --train "$build_dir/trainers/train" --torchrun "${torchrun[*]@Q}" \
  --peer bench/peers/python_ddp_recovery.py "${args[@]}"
