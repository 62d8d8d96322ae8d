#!/usr/bin/env bash
# Stop the single-node test SLURM that scripts/slurm/start.sh started in STATE_DIR:
#   scripts/slurm/stop.sh [STATE_DIR]   # default: $SSMBENCH_SLURM_DIR or /tmp/ssmbench-slurm
# Only the processes named by its PID files are stopped (after checking that each PID is
# still the daemon it was), its jobs are cancelled first, and /etc/slurm/slurm.conf is
# removed only if it is the symlink start.sh made. The state folder is kept (logs).
set -uo pipefail

STATE=${1:-${SSMBENCH_SLURM_DIR:-/tmp/ssmbench-slurm}}
ETC_CONF=/etc/slurm/slurm.conf
PATH=$PATH:/usr/sbin
say() { echo "slurm-stop: $*" >&2; }

if [ ! -d "$STATE" ]; then
  say "nothing to stop: no state folder $STATE"
  exit 0
fi
STATE=$(cd "$STATE" && pwd)
if [ ! -f "$STATE/.ssmbench-slurm" ]; then
  say "ERROR: $STATE was not made by scripts/slurm/start.sh (no .ssmbench-slurm marker)"
  exit 1
fi
export SLURM_CONF=$STATE/slurm.conf

# PID from a PID file if it is still the named daemon, else nothing.
daemon_pid() {
  local pidfile=$STATE/$1.pid pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] || return 1
  echo "$pid"
}

# Cancel this cluster's jobs so that no job step outlives slurmd.
if daemon_pid slurmctld >/dev/null; then
  jobs=$(squeue -h -o %i 2>/dev/null || true)
  if [ -n "$jobs" ]; then
    say "cancelling jobs: $(echo "$jobs" | tr '\n' ' ')"
    # shellcheck disable=SC2086
    scancel $jobs 2>/dev/null || true
    for _ in $(seq 60); do
      [ -z "$(squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
fi

status=0
for name in slurmd slurmctld munged; do
  if pid=$(daemon_pid "$name"); then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "$name (PID $pid) did not stop on SIGTERM within 10 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null
    fi
    say "stopped $name (PID $pid)"
  elif [ -f "$STATE/$name.pid" ]; then
    say "$name: PID file $STATE/$name.pid names no running $name (already stopped)"
  fi
  rm -f "$STATE/$name.pid"
done

if [ -L "$ETC_CONF" ] && [ "$(readlink "$ETC_CONF")" = "$STATE/slurm.conf" ]; then
  rm -f "$ETC_CONF"
  if [ -f "$STATE/.made-etc-slurm" ]; then
    rmdir /etc/slurm 2>/dev/null || true
    rm -f "$STATE/.made-etc-slurm"
  fi
fi
exit $status
