#!/usr/bin/env bash
# Checks that the docs and the comments name only files the repository has: every path that
# starts at a top-level folder of the repository (launcher/os/process.hpp, docs/events.md, or
# such a path without its extension, or a folder), and every relative link of a Markdown file,
# must exist in the checkout (build outputs under build/ or $BUILD_DIR/, and placeholders
# in capitals such as launcher/X/, are not checked). Prints each one
# that does not (file:line: path) and exits 1 if there is one. Usage: check-paths.sh [ROOT]
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
root=${1:-$repo_root}
cd "$root"
if [[ -e .git ]]; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's#^\./##' | sort)
fi
tops=$(printf '%s\n' "${files[@]}" | sed -n 's#^\([^/]*\)/.*#\1#p' | sort -u | grep -v '^build' | paste -sd '|')
# A path exists as a file, a folder, or a file with an extension added (launcher/os/process);
# a glob (scripts/bench-*.sh) when it matches something.
exists() {
  [[ -e $1 ]] && return 0
  compgen -G "$1" >/dev/null || compgen -G "$1.*" >/dev/null
}
status=0
for f in "${files[@]}"; do
  case $f in
    *.md) lines=$(grep -nE "($tops)/|\]\(" "$f" || true) ;;
    *.cpp | *.hpp | *.h | *.cc) lines=$(grep -nE "//.*($tops)/" "$f" || true) ;;
    *.sh | *.py | *CMakeLists.txt | *.cmake | *.sbatch | .ci/run) lines=$(grep -nE "#.*($tops)/" "$f" | grep -v 'shellcheck source=' || true) ;;
    *) continue ;;
  esac
  [[ -n $lines ]] || continue
  while IFS= read -r hit; do
    n=${hit%%:*}
    text=${hit#*:}
    paths=$(grep -oE "(^|[^A-Za-z0-9_./\$~-])($tops)/[A-Za-z0-9_./+*-]*[A-Za-z0-9_+*-]" <<<"$text" | sed -E 's#^[^A-Za-z0-9_.]##' || true)
    if [[ $f == *.md ]]; then
      links=$(grep -oE '\]\([^)#[:space:]]+' <<<"$text" | sed 's/^](//' | grep -vE '^[a-z]+:' | grep -E '[./]' || true)
      for l in $links; do paths+=$'\n'"$(dirname "$f")/$l"; done
    fi
    for p in $paths; do
      [[ $p == build/* || $p == */build/* ]] && continue
      [[ /$p/ =~ /[A-Z]+/ ]] && continue  # a placeholder: launcher/X/, OUTDIR/...
      exists "$p" && continue
      echo "check-paths: $f:$n names $p, which the repository does not have"
      status=1
    done
  done <<<"$lines"
done
((status == 0)) && echo "check-paths: every path named in the docs and comments exists"
exit $status
