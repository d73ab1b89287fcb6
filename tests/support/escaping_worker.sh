#!/bin/sh
# A worker that starts one helper for each way a process escapes its launcher's supervision,
# records each helper's pid in DIR/<kind>.<RANK>.<attempt>, marks itself up in
# DIR/up.<RANK>.<attempt>, then ends as END says:
#   exit0    every worker exits 0
#   exit3    rank 1 exits 3 once rank 0 is up; the others wait to be stopped
#   restart  as exit3 in attempt 0; a later attempt first writes DIR/clean.<RANK>.<attempt>:
#            "clean" when no helper of the attempt before is alive, else the pids alive; then exits 0
#   wait     waits to be stopped (a signal, a hang verdict, a lost node)
# The helpers: escaping_helpers.sh. Usage: escaping_worker.sh DIR END
dir=$1
end=$2
attempt=${TORCHELASTIC_RESTART_COUNT:-0}
tag=$RANK.$attempt
# shellcheck source=SCRIPTDIR/escaping_helpers.sh
. "$(dirname "$0")/escaping_helpers.sh"
start_escaping_helpers "$dir" "$tag"

alive() {  # PID: running and not a zombie
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
  [ -n "$state" ] && [ "$state" != Z ]
}
if [ "$end" = restart ] && [ "$attempt" -gt 0 ]; then
  left=""
  for kind in $escaping_kinds; do
    for file in "$dir/$kind".*.$((attempt - 1)); do
      pid=$(cat "$file")
      if alive "$pid"; then left="$left $pid"; fi
    done
  done
  echo "${left:-clean}" > "$dir/clean.$tag"
  touch "$dir/up.$tag"
  exit 0
fi
touch "$dir/up.$tag"
case $end in
  exit0) exit 0 ;;
  exit3 | restart)
    if [ "$RANK" = 1 ]; then
      while [ ! -e "$dir/up.0.$attempt" ]; do sleep 0.02; done
      exit 3
    fi ;;
esac
exec sleep 1000
