#!/usr/bin/env bash
# scripts/lib.sh, each helper in a subshell: median (odd and even counts, numeric order,
# stdin, bad input), free_port (bindable, below the ephemeral range, N distinct), die's and
# skip's exit codes and messages, need's message (the tool, its Debian package, scripts/install-deps.sh; every
# package it names is in install-deps.sh's list), the BUILD_DIR rule, and that every script
# in scripts/ and every shell test sources lib.sh. Usage: lib_test.sh [REPO_ROOT]
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
root=${1:-$repo_root}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() {  # expect WHAT GOT WANT
  [[ $2 == "$3" ]] || fail "$1: got '$2', expected '$3'"
}

# run_status CMD...: CMD's exit status in a subshell; its stdout in $tmp/out, stderr in $tmp/err.
run_status() {
  local rc=0
  ("$@") >"$tmp/out" 2>"$tmp/err" || rc=$?
  echo "$rc"
}

# --- median ---------------------------------------------------------------------------
expect "median of 3 1 2" "$(median 3 1 2)" 2
expect "median of an even count" "$(median 4 1 3 2)" 2.5
expect "median of one value" "$(median 0.25)" 0.25
expect "median keeps the middle value as written" "$(median 1.50 0.9 2)" 1.50
expect "median compares numbers, not text" "$(median 10 9 100)" 10
expect "median with exponents and negatives" "$(median 1e3 -5 999 20)" 509.5
expect "median of fractions" "$(median 0.1 0.2)" 0.15
expect "median from stdin, blank lines skipped" "$(printf '5\n 7 \n\n1\n' | median)" 5
expect "median of nothing: status" "$(run_status median </dev/null)" 2
grep -q "median: no numbers" "$tmp/err" || fail "median of nothing: no message ($(cat "$tmp/err"))"
expect "median of a word: status" "$(run_status median 1 x 3)" 2
grep -q 'median: not a number: "x"' "$tmp/err" || fail "median of a word: message '$(cat "$tmp/err")'"

# --- free_port ------------------------------------------------------------------------
port=$(free_port)
[[ $port =~ ^[0-9]+$ ]] || fail "free_port printed '$port'"
((port > 0 && port < 65536)) || fail "free_port printed port $port"
read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range
((port < ephemeral_low)) || fail "free_port printed port $port, in the ephemeral range (from $ephemeral_low)"
python3 - "$port" <<'PY' || fail "free_port's port $port cannot be bound"
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
PY
read -r -a ports <<<"$(free_port 5)"
expect "free_port 5: how many" "${#ports[@]}" 5
expect "free_port 5: all distinct" "$(printf '%s\n' "${ports[@]}" | sort -u | wc -l)" 5

# --- die, fail, skip ------------------------------------------------------------------
expect "die: default status" "$(run_status die "went wrong")" 2
expect "die: message on stderr, named by the script" "$(cat "$tmp/err")" "lib_test.sh: went wrong"
expect "die: nothing on stdout" "$(cat "$tmp/out")" ""
expect "die: given status" "$(run_status die 121 "bad flag")" 121
expect "die: the status is not in the message" "$(cat "$tmp/err")" "lib_test.sh: bad flag"
expect "die: a message of digits alone is a message" "$(run_status die 42)" 2
expect "die: ... printed" "$(cat "$tmp/err")" "lib_test.sh: 42"
prefixed() { die_prefix="plot.sh: error: "; die 1 "no input"; }
expect "die: die_prefix" "$(run_status prefixed)" 1
expect "die: die_prefix's message" "$(cat "$tmp/err")" "plot.sh: error: no input"
expect "fail: status" "$(run_status fail "it broke")" 1
expect "fail: message" "$(cat "$tmp/err")" "FAIL: it broke"
expect "skip: status (CTest's SKIP_RETURN_CODE)" "$(run_status skip "no GPU")" 77
expect "skip: message" "$(cat "$tmp/out")" "SKIP: no GPU"

# --- need -----------------------------------------------------------------------------
expect "need: tools present" "$(run_status need sh /bin/sh)" 0
expect "need: nothing printed when present" "$(cat "$tmp/out" "$tmp/err")" ""
mkdir -p "$tmp/empty"
# Without PATH no tool is found; need itself uses only builtins until it dies.
# shellcheck disable=SC2123  # emptying PATH is the point
no_tools() { PATH=$tmp/empty; need "$@"; }
expect "need: missing tool, default status" "$(run_status no_tools gnuplot)" 2
expect "need: the message" "$(cat "$tmp/err")" \
  "lib_test.sh: gnuplot not found; install it with scripts/install-deps.sh (Debian package gnuplot-nox)"
expect "need: given status" "$(run_status no_tools 1 etcd ip ss)" 1
expect "need: several tools, each package once" "$(cat "$tmp/err")" \
  "lib_test.sh: etcd, ip, ss not found; install them with scripts/install-deps.sh (Debian packages etcd-server, iproute2)"
expect "need: a path" "$(run_status need 1 "$tmp/empty/time")" 1
expect "need: a path's package" "$(cat "$tmp/err")" \
  "lib_test.sh: $tmp/empty/time not found; install it with scripts/install-deps.sh (Debian package time)"
expect "need: a tool install-deps.sh does not know" "$(run_status need no-such-tool-anywhere)" 2
expect "need: ... says so" "$(cat "$tmp/err")" \
  "lib_test.sh: no-such-tool-anywhere not found (scripts/install-deps.sh does not install no-such-tool-anywhere)"
expect "need 77: skips" "$(run_status no_tools 77 etcd)" 77
expect "need 77: a SKIP line" "$(cat "$tmp/out")" \
  "SKIP: etcd not found; install it with scripts/install-deps.sh (Debian package etcd-server)"
# Every package need names is one scripts/install-deps.sh installs.
listed=" $(sed -n '/^packages=(/,/^)/p' "$root/scripts/install-deps.sh" | sed 's/#.*//; s/[()]/ /g; s/packages=//' | tr -s ' \n' '  ') "
named=$(sed -n '/^debian_package() {/,/^}/p' "$root/scripts/lib.sh" | sed -n 's/.*) echo \([a-z0-9.+-]*\) ;;/\1/p')
[[ -n $named ]] || fail "no packages found in lib.sh's debian_package"
for p in $named; do
  [[ $listed == *" $p "* ]] || fail "need names the Debian package $p, which scripts/install-deps.sh does not install"
done

# --- the BUILD_DIR rule ---------------------------------------------------------------
build_of() {  # build_of BUILD_DIR (empty: unset): lib.sh's build_dir
  (
    unset BUILD_DIR
    [[ -z $1 ]] || BUILD_DIR=$1
    # shellcheck source=SCRIPTDIR/../../scripts/lib.sh
    source "$root/scripts/lib.sh"
    echo "$build_dir"
  )
}
expect "build_dir by default" "$(cd /tmp && build_of "")" "$root/build"
expect "a relative BUILD_DIR is taken from the repository root" "$(cd /tmp && build_of out/b)" "$root/out/b"
expect "an absolute BUILD_DIR" "$(build_of /srv/b)" /srv/b

# --- every script sources lib.sh (the fragments below are sourced by scripts that do; the
# escaping worker is a POSIX sh worker the launcher runs, not a script of ours to run)
cd "$root"
missing=()
while read -r f; do
  case $f in
    scripts/lib.sh | scripts/netns_nodes.sh | tests/multinode/netns_lib.sh | tests/hosts/hosts_lib.sh | \
      tests/gpu/gpu_check_lib.sh | \
      tests/support/escaping_helpers.sh | tests/support/escaping_worker.sh) continue ;;
  esac
  # shellcheck disable=SC2016  # the line as written in the scripts
  grep -qE '^source "\$\(dirname "\$0"\)/(\.\./)*(scripts/)?lib\.sh"$' "$f" || missing+=("$f")
done < <(find scripts tests -name '*.sh' | sort)
((${#missing[@]} == 0)) || fail "these scripts do not source scripts/lib.sh: ${missing[*]}"

echo "ok: median, free_port, die, fail, skip, need, BUILD_DIR; every script sources lib.sh"
