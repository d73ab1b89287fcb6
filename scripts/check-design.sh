#!/usr/bin/env bash
# The house's budgets (docs/architecture.md "Budgets"), run by CTest like check-layers.sh, so
# that a feature has to fit the house to land. Prints each figure, names each violation, and
# exits 1 if there is one:
#   - a function over 60 lines (launcher runtime trainers contract bench; Universal Ctags), but
#     the declarative tables named in kTables below;
#   - a launcher .cpp over 450 lines;
#   - a raw POSIX socket or process call, or a socket header, in launcher/ outside os/ and net/
#     (their wrappers are the way: os::ChildSet, os::UniqueFd, net::listen_acceptor, Asio);
#   - a child started or reaped by hand outside os/ (spawn_worker, start_worker, confirm_exec,
#     try_reap, os::wait_for: a child belongs to an os::ChildSet, through the ChildRegistry);
#   - a detached thread in launcher/ (every thread is joined by its owner);
#   - a README over 450 lines (the details go to docs/).
# Usage: check-design.sh [ROOT]
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
root=${1:-$repo_root}
cd "$root"
need ctags
readonly kFunctionLines=60 kCppLines=450 kReadmeLines=450
# Tables written as code, one entry a line: long by nature, not by logic.
readonly kTables=" define_flags "
status=0
violation() {
  echo "check-design: $*"
  status=1
}
sources() { find "$@" -name '*.cpp' -o -name '*.hpp' | sort; }

# 1. Function length.
long=0
while IFS=$'\t' read -r name file lines; do
  if [[ $kTables == *" $name "* ]]; then
    echo "check-design: table $name ($file) is $lines lines (exempt)"
    continue
  fi
  violation "$file: $name is $lines lines (at most $kFunctionLines; split it)"
  long=$((long + 1))
done < <(sources launcher runtime trainers contract bench |
  xargs ctags --c++-kinds=f --fields=+ne --languages=C++ -f - 2>/dev/null |
  awk -F'\t' -v max=$kFunctionLines '{
    l = e = 0
    for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) l = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
    if (l && e && e - l + 1 > max) printf "%s\t%s:%s\t%d\n", $1, $2, l, e - l + 1
  }')
echo "check-design: functions over $kFunctionLines lines: $long"

# 2. Launcher .cpp size.
largest=0 largest_file=""
while read -r lines file; do
  ((lines > largest)) && largest=$lines largest_file=$file
  ((lines > kCppLines)) && violation "$file is $lines lines (at most $kCppLines; split it by responsibility)"
done < <(find launcher -name '*.cpp' -print0 | xargs -0 wc -l | grep -v ' total$')
echo "check-design: largest launcher .cpp: $largest lines ($largest_file)"

# Each grep hit (FILE:LINE:TEXT) as a violation `what`; then the figure, as `figure: N`.
hits() {
  local what=$1 figure=$2 found=$3 count=0 hit
  if [[ -n $found ]]; then
    while IFS= read -r hit; do
      violation "${hit%%:*}: $what: ${hit#*:}"
      count=$((count + 1))
    done <<<"$found"
  fi
  echo "check-design: $figure: $count"
}

# 3. Raw POSIX sockets and processes outside os/ and net/.
hits "raw POSIX socket or process call outside os/ and net/" \
  "raw POSIX socket and process calls outside os/ and net/" \
  "$(grep -rnE --include='*.cpp' --include='*.hpp' \
    -e '#include <(sys/socket|netdb|netinet/[a-z]+|poll|sys/wait|spawn)\.h>' \
    -e '(^|[^A-Za-z0-9_:>])::(socket|connect|bind|listen|accept4?|send|recv|poll|getaddrinfo|setsockopt|getsockname|shutdown|pipe2?)\(' \
    -e '(^|[^A-Za-z0-9_:>])::(fork|vfork|waitpid|wait4|waitid|execvp?e?|kill|killpg|posix_spawnp?)\(' \
    launcher --exclude-dir=os --exclude-dir=net || true)"

# 4. Children started or reaped by hand outside os/.
hits "a child started or reaped by hand outside os/ (add it to an os::ChildSet)" \
  "spawn and reap calls outside os/" \
  "$(grep -rnE --include='*.cpp' --include='*.hpp' \
    -e '\b(os::)?(spawn_worker|start_worker|confirm_exec|try_reap)\(|\bos::wait_for\(' \
    launcher --exclude-dir=os || true)"

# 5. Detached threads.
hits "a detached thread (own it and join it)" "detached threads" \
  "$(grep -rnE --include='*.cpp' --include='*.hpp' '\.detach\(\)' launcher || true)"

# 6. The README.
readme=$(wc -l <README.md)
((readme > kReadmeLines)) && violation "README.md is $readme lines (at most $kReadmeLines; move details to docs/)"
echo "check-design: README.md: $readme lines"
exit "$status"
