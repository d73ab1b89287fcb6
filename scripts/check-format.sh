#!/usr/bin/env bash
# Checks that every C++ file of the repository is formatted by .clang-format, with Debian 12's
# clang-format 14 (other versions format differently: the check then skips, exit 77). Prints
# each unformatted file with a diff of what clang-format would change and exits 1 if there is
# one. --fix formats them in place instead. Usage: check-format.sh [--fix] [ROOT]
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
fix=0
if [[ ${1:-} == --fix ]]; then
  fix=1
  shift
fi
root=${1:-$repo_root}
need 77 clang-format
version=$(clang-format --version | sed -nE 's/.*version ([0-9]+)\..*/\1/p')
[[ $version == 14 ]] || skip "clang-format $version is not Debian 12's 14, which .clang-format is checked with"
cd "$root"
[[ -f .clang-format ]] || die 1 "no .clang-format in $root"
if [[ -e .git ]]; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cc')
else
  mapfile -t files < <(find . -path ./build -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' \) -print | sed 's#^\./##' | sort)
fi
((${#files[@]} > 0)) || die 1 "no C++ files found in $root"
if ((fix)); then
  clang-format -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
# One clang-format for every file (a process per file took minutes on a loaded machine), then
# a diff for each file it names.
bad=0
if ! report=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  mapfile -t unformatted < <(printf '%s\n' "$report" |
    sed -nE 's/^(.+):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p' | sort -u)
  ((${#unformatted[@]} > 0)) || die 1 "clang-format failed: $report"
  for f in "${unformatted[@]}"; do
    clang-format "$f" | diff -u --label "$f" --label "$f (clang-format)" "$f" - || true
  done
  bad=${#unformatted[@]}
fi
if ((bad > 0)); then
  echo "check-format: $bad of ${#files[@]} C++ files are not formatted; run scripts/check-format.sh --fix"
  exit 1
fi
echo "check-format: all ${#files[@]} C++ files are formatted"
