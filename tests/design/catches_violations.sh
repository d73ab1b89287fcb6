#!/usr/bin/env bash
# The design check must fail on each budget it keeps: copy the tree's checked folders to a
# scratch tree (which passes as it is), plant one violation of each kind (a 61-line function, a
# 451-line launcher .cpp, a raw socket call and a socket header outside os/ and net/, a child
# started by hand outside os/, a detached thread, a 451-line README), and expect each to be named
# with its figure.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/scripts"
cp -r "$src/launcher" "$src/runtime" "$src/trainers" "$src/contract" "$src/bench" "$src/README.md" "$scratch/"
cp "$src/scripts/check-design.sh" "$src/scripts/lib.sh" "$scratch/scripts/"
"$scratch/scripts/check-design.sh" "$scratch" >/dev/null || fail "the copy of the tree itself does not pass"

{
  echo 'int planted_long_function() {'
  echo '  int x = 0;'
  for _ in $(seq 59); do echo '  ++x;'; done
  echo '  return x;'
  echo '}'
} >>"$scratch/launcher/base/text.cpp"
for _ in $(seq 451); do echo '// filler'; done >"$scratch/launcher/base/planted_big.cpp"
printf '#include <sys/socket.h>\nint planted_socket() { return ::socket(0, 0, 0); }\n' >"$scratch/launcher/cli/planted_socket.cpp"
printf 'int planted_spawn() { return os::spawn_worker({}); }\n' >"$scratch/launcher/warm/planted_spawn.cpp"
printf '#include <thread>\nvoid planted_detach() { std::thread([] {}).detach(); }\n' >"$scratch/launcher/report/planted_thread.cpp"
for _ in $(seq 451); do echo 'line'; done >"$scratch/README.md"

if out=$("$scratch/scripts/check-design.sh" "$scratch" 2>&1); then
  fail "the check passed a tree with a violation of every budget: $out"
fi
expect() { grep -qF -- "$1" <<<"$out" || fail "not named: '$1' in: $out"; }
expect "planted_long_function is 63 lines (at most 60"
expect "functions over 60 lines: 1"
expect "launcher/base/planted_big.cpp is 451 lines (at most 450"
expect "launcher/cli/planted_socket.cpp: raw POSIX socket or process call outside os/ and net/: 1:#include <sys/socket.h>"
expect "launcher/cli/planted_socket.cpp: raw POSIX socket or process call outside os/ and net/: 2:"
expect "launcher/warm/planted_spawn.cpp: a child started or reaped by hand outside os/"
expect "spawn and reap calls outside os/: 1"
expect "launcher/report/planted_thread.cpp: a detached thread"
expect "README.md is 451 lines (at most 450"
echo "check-design names every planted violation"
