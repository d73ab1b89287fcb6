#!/usr/bin/env bash
# Checks that launcher/ keeps its layers (docs/architecture.md): every #include "launcher/X/..."
# in folder F must name a layer F may use, and every namespace F's files open is F's own
# (ddp::launch::F, or nested in it; a sublayer many_hosts/plan: ddp::launch::many_hosts::plan;
# base/, app/ and the top-level files: ddp::launch itself, or nested in it). A layer may use the
# layers below it (the table below is the rule):
#   base  <-  cli, os, console  <-  contain, worker  <-  report  <-  progress, snapshot, warm  <-  supervise
#   <-  status (also http), preflight  <-  node  <-  rendezvous  ->  store, etcd (-> base)  <-  app
# contain: what keeps a job's processes inside it and ends them with it (subreaper, cgroup, token,
# the leftover sweep); report: event log, status board, failure reports, recovery timeline; progress: the one reader
# of the progress records (hang, stragglers, first step); snapshot: the in-memory snapshot files
# and their persister; warm: standbys; supervise: one attempt's processes; status: the status
# endpoint; preflight: a node's pre-flight checks, their measurements and verdict, the NCCL probe and
# the link probe (on net);
# node: a node's services for a job (NodeSession), the one agent loop and the single-node rounds;
# rendezvous: the multi-node rounds (the rendezvous, its store, its records);
# console: the launcher's own voice (launcher_notice, write_all) and a terminal's live lines.
# net (what the three servers share: the listen sequence, ListenError) uses nothing of the
# launcher's; store and c10d (the workers' store, used by node and rendezvous) only net;
# etcd only base, http (the status endpoint's server) base and net; many_hosts/plan (the pure
# host list, filters, env forwarding and agent plan of a many-host launch) only base; many_hosts
# (its ssh connections, output relay and coordinator) base, cli, os, console and many_hosts/plan;
# app (the command bodies: a launch, the many-host agent, status, the resolution of a job) and
# main may use everything.
# Prints each violation (file: include) and exits 1 if there is one. Usage: check-layers.sh [ROOT]
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
root=${1:-$repo_root}
declare -A allowed=(
  [base]="base"
  [cli]="base cli"
  [os]="base os"
  [console]="base console"
  [contain]="base cli os console contain"
  [worker]="base cli os console worker"
  [report]="base cli os console worker report"
  [progress]="base os console worker report progress"
  [snapshot]="base cli os console worker report snapshot"
  [warm]="base os console worker report contain warm"
  [supervise]="base cli os console contain worker report progress warm supervise"
  [status]="base cli os console worker report http net status"
  [preflight]="base cli os net console contain worker report snapshot warm preflight"
  [node]="base cli os console contain worker report progress snapshot warm supervise status c10d net preflight node"
  [rendezvous]="base cli os console contain worker report snapshot supervise status preflight node rendezvous store etcd c10d net"
  [net]="net"
  [store]="store net"
  [c10d]="c10d net"
  [etcd]="base etcd"
  [http]="base http net"
  [many_hosts/plan]="base many_hosts/plan"
  [many_hosts]="base cli os console many_hosts/plan many_hosts"
  [app]="base cli os console contain worker report progress snapshot warm supervise status preflight node rendezvous store etcd c10d net http many_hosts/plan many_hosts app"
)
status=0
cd "$root/launcher"
for layer in "${!allowed[@]}"; do
  [[ -d $layer ]] || { echo "check-layers: launcher/$layer is missing"; status=1; continue; }
  exclude=()  # a sublayer's folder is checked as its own layer
  [[ $layer == many_hosts ]] && exclude=(--exclude-dir=plan)
  while IFS= read -r hit; do
    file=${hit%%:*}
    used=$(sed -E 's#.*"launcher/(many_hosts/plan|[a-z0-9_]+)/.*#\1#' <<<"$hit")
    if [[ " ${allowed[$layer]} " != *" $used "* ]]; then
      echo "check-layers: launcher/$file includes launcher/$used/ (a $layer file may use: ${allowed[$layer]})"
      status=1
    fi
  done < <(grep -rHE "${exclude[@]}" '^#include "launcher/[a-z0-9_]+/' "$layer" || true)
  # A relative include could climb out of the layer; none may.
  if grep -rHE "${exclude[@]}" '^#include "\.\./' "$layer"; then status=1; fi
  # Namespaces mirror folders.
  own=ddp::launch::${layer//\//::}
  [[ $layer == base || $layer == app ]] && own=ddp::launch
  while IFS= read -r hit; do
    ns=$(sed -E 's#^[^:]+:namespace ([A-Za-z0-9_:]+) \{.*#\1#' <<<"$hit")
    if [[ $ns != "$own" && $ns != "$own"::* ]]; then
      echo "check-layers: launcher/${hit%%:*} opens namespace $ns (launcher/$layer/ is $own)"
      status=1
    fi
  done < <(grep -rHE "${exclude[@]}" '^namespace ddp[A-Za-z0-9_:]* \{' "$layer" || true)
done
while IFS= read -r hit; do
  ns=$(sed -E 's#^[^:]+:namespace ([A-Za-z0-9_:]+) \{.*#\1#' <<<"$hit")
  if [[ $ns != ddp::launch && $ns != ddp::launch::* ]]; then
    echo "check-layers: launcher/${hit%%:*} opens namespace $ns (launcher/ is ddp::launch)"
    status=1
  fi
done < <(grep -HE '^namespace ddp[A-Za-z0-9_:]* \{' ./*.cpp ./*.hpp || true)
for f in *; do
  [[ -f $f || -n ${allowed[$f]+x} ]] || { echo "check-layers: launcher/$f is not a known layer; add it to this script and docs/architecture.md"; status=1; }
done
((status == 0)) && echo "check-layers: launcher/ layers and namespaces are respected"
exit $status
