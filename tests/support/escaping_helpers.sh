# shellcheck shell=sh
# Sourced by test workers: start_escaping_helpers DIR TAG starts one helper for each way a
# process escapes its launcher's supervision and waits until each wrote its pid to
# DIR/<kind>.TAG: its own session ignoring SIGTERM and SIGHUP (setsid, as a daemonizing tool
# does), a double fork, a process group of its own ignoring SIGTERM, one under nohup, one in the
# worker's session ignoring SIGTERM, one stopped (SIGSTOP). escaping_kinds lists the kinds.
escaping_kinds="setsid doublefork pgroup nohup session stopped"

start_escaping_helpers() {  # DIR TAG
  setsid sh -c "trap '' TERM HUP; echo \$\$ > $1/setsid.$2; exec sleep 1000" </dev/null >/dev/null 2>&1 &
  ( (trap '' TERM; exec sleep 1000) </dev/null >/dev/null 2>&1 & echo $! > "$1/doublefork.$2")
  python3 -c "import os, signal, sys, time
os.setpgid(0, 0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1], 'w').write('%d\n' % os.getpid())
time.sleep(1000)" "$1/pgroup.$2" </dev/null >/dev/null 2>&1 &
  nohup sh -c "echo \$\$ > $1/nohup.$2; exec sleep 1000" </dev/null >/dev/null 2>&1 &
  sh -c "trap '' TERM; echo \$\$ > $1/session.$2; exec sleep 1000" </dev/null >/dev/null 2>&1 &
  sh -c "echo \$\$ > $1/stopped.$2; kill -STOP \$\$; exec sleep 1000" </dev/null >/dev/null 2>&1 &
  for kind in $escaping_kinds; do
    while [ ! -s "$1/$kind.$2" ]; do sleep 0.02; done
  done
}
