#!/usr/bin/env bash
# Per-node launch script: run the same line on every node of a multi-node job.
#
#   NNODES=2 NODE_RANK=0 MASTER_ADDR=node0 scripts/run-node.sh ./build/trainers/train --epochs 5   # on node0
#   NNODES=2 NODE_RANK=1 MASTER_ADDR=node0 scripts/run-node.sh ./build/trainers/train --epochs 5   # on node1
#
# Or with flags before the program: --nnodes N --node-rank R --master-addr HOST
# --master-port PORT --nproc-per-node K (gpu by default when GPUs are visible, else 1).
# Everything from PROGRAM on is passed to the program. Extra ddp-launch flags go in
# DDP_LAUNCH_ARGS (e.g. "--max-restarts=3 --log-dir=/shared/logs"). DDP_LAUNCH names the
# binary (default: $BUILD_DIR/launcher/ddp-launch, scripts/lib.sh, else ddp-launch on PATH).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
nnodes=${NNODES:-1}
node_rank=${NODE_RANK:-0}
master_addr=${MASTER_ADDR:-}
master_port=${MASTER_PORT:-29500}
nproc=${NPROC_PER_NODE:-auto}

usage() { sed -n '2,12p' "$0" >&2; exit 121; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --nnodes) nnodes=$2; shift 2 ;;
    --node-rank) node_rank=$2; shift 2 ;;
    --master-addr) master_addr=$2; shift 2 ;;
    --master-port) master_port=$2; shift 2 ;;
    --nproc-per-node) nproc=$2; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) die 121 "unknown option $1 (ddp-launch flags go in DDP_LAUNCH_ARGS)" ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || { echo "run-node.sh: no program given" >&2; usage; }
if [[ $nnodes -gt 1 && -z $master_addr ]]; then
  die 121 "MASTER_ADDR (or --master-addr) must name node 0 on every node"
fi
launcher=${DDP_LAUNCH:-}
if [[ -z $launcher ]]; then
  if [[ -x $build_dir/launcher/ddp-launch ]]; then launcher=$build_dir/launcher/ddp-launch
  else launcher=ddp-launch; fi
fi
args=(--nnodes="$nnodes" --node-rank="$node_rank" --nproc-per-node="$nproc" --master-port="$master_port")
[[ -n $master_addr ]] && args+=(--master-addr="$master_addr")
# shellcheck disable=SC2086
exec "$launcher" "${args[@]}" ${DDP_LAUNCH_ARGS:-} "$@"
