#!/usr/bin/env bash
# The leftovers table: how many processes outlive a job of 2 workers that each start two
# escaping helpers (one in its own session ignoring SIGTERM and SIGHUP, as a daemonizing tool
# does; one in the worker's session ignoring SIGTERM), for each way the job ends: the workers
# exit 0, one exits 3, Ctrl-C (SIGINT) on the launcher, SIGKILL of the launcher. One column per
# MODE: a --containment mode (cgroup, subreaper), default (no flag: LAUNCHER=path runs another
# build, one without the flag), or torchrun (the torch venv's, scripts/lib.sh). Prints a Markdown
# table. Usage: scripts/orphan-table.sh [MODE...]   (default: cgroup subreaper torchrun)
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
launcher=${LAUNCHER:-$build_dir/launcher/ddp-launch}
[[ -x $launcher ]] || die "no $launcher: build first (cmake --build $build_dir)"
modes=("$@")
((${#modes[@]})) || modes=(cgroup subreaper torchrun)
work=$(mktemp -d)
trap 'pkill -9 -f "orphan-table-$$" 2>/dev/null || true; rm -rf "$work"' EXIT
marker=orphan-table-$$
cat >"$work/worker.sh" <<WORKER
#!/bin/bash
setsid bash -c 'trap "" TERM HUP; exec -a $marker-setsid sleep 1000' </dev/null >/dev/null 2>&1 &
bash -c 'trap "" TERM; exec -a $marker-session sleep 1000' </dev/null >/dev/null 2>&1 &
until [ "\$(pgrep -c -f $marker-)" -ge \$((2 * (RANK + 1))) ]; do sleep 0.02; done
touch "$work/up.\$RANK"
case \$END in
  exit0) exit 0 ;;
  exit3) [ "\$RANK" = 1 ] && exit 3 ;;
esac
while sleep 1; do :; done
WORKER
chmod +x "$work/worker.sh"

# Runs the job one way; prints how many of the helpers are left 3 s after the launcher ended.
left_after() {  # MODE END
  rm -f "$work"/up.*
  local cmd=("$launcher" --nproc-per-node=2 --shutdown-timeout=2)
  case $1 in
    default) ;;
    torchrun) cmd=("$torch_python" -m torch.distributed.run --standalone --nproc-per-node=2 --no-python) ;;
    *) cmd+=(--containment="$1") ;;
  esac
  END=$2 TORCH_ELASTIC_SHUTDOWN_TIMEOUT=2 setsid "${cmd[@]}" "$work/worker.sh" >/dev/null 2>&1 &
  local pid=$!
  if [[ $2 == sigint || $2 == sigkill ]]; then
    until [[ -e $work/up.0 && -e $work/up.1 ]]; do sleep 0.05; done
    kill "-${2#sig}" "$pid"
  fi
  wait "$pid" || true
  sleep 3
  pgrep -c -f "$marker-" || true
  pkill -9 -f "$marker-" || true
}

header="| how the job ends |"
rule="|---|"
for m in "${modes[@]}"; do header+=" left behind ($m) |"; rule+="---|"; done
echo "$header"
echo "$rule"
for end in exit0 exit3 sigint sigkill; do
  case $end in
    exit0) row="| the workers exit 0 |" ;;
    exit3) row="| one worker exits 3 |" ;;
    sigint) row="| Ctrl-C on the launcher |" ;;
    sigkill) row="| the launcher is SIGKILLed |" ;;
  esac
  for m in "${modes[@]}"; do row+=" $(left_after "$m" "$end") |"; done
  echo "$row"
done
