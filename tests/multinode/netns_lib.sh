# Helpers shared by the network-namespace tests (sourced: tests/multinode/netns_test.sh,
# tests/etcd/netns_etcd_test.sh, after scripts/lib.sh: skip and need come from there). The
# sourcing script sets `namespaces` (the names it made, for cleanup and no_processes_left)
# and `work` (a temp dir, removed on exit).
# shellcheck shell=bash disable=SC2154,SC2034  # namespaces and work come from the caller; rc is its result
failures=0 passes=0

netns_cleanup() {  # every background job, every process in our namespaces, the namespaces
  for pid in $(jobs -p); do kill -9 "$pid" 2>/dev/null; done
  local ns
  for ns in "${namespaces[@]}"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null; done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$work"
}

check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "PASS: $name"; passes=$((passes + 1)); else echo "FAIL: $name"; failures=$((failures + 1)); fi
}

wait_rc() {  # wait_rc PID TIMEOUT: sets rc to the exit code, or "timeout"
  local pid=$1 limit=$2 waited=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.1; waited=$((waited + 1))
    if (( waited > limit * 10 )); then rc=timeout; return; fi
  done
  wait "$pid"; rc=$?
}

wait_for() {  # wait_for SECONDS COMMAND...: true once COMMAND succeeds, false after SECONDS
  local limit=$1; shift
  for _ in $(seq $(( limit * 10 ))); do "$@" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

no_processes_left() {  # no_processes_left [NS...]: those namespaces (default: all) empty within 5 s
  local list=("$@")
  (( ${#list[@]} )) || list=("${namespaces[@]}")
  for _ in $(seq 50); do
    [[ -z "$(for ns in "${list[@]}"; do ip netns pids "$ns"; done)" ]] && return 0
    sleep 0.1
  done
  return 1
}

seconds_since() {  # seconds_since START (from date +%s.%N), one decimal
  awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $1}"
}

netns_report() {  # the logs on failure, the tally, the exit code
  if (( failures > 0 )); then
    for f in "$work"/*.log; do echo "--- $f"; cat "$f"; done
  fi
  echo "$passes passed, $failures failed"
  exit $(( failures > 0 ))
}
