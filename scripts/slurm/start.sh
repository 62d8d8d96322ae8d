#!/usr/bin/env bash
# A real single-node SLURM on 127.0.0.1, for tests and CI (no systemd needed).
#
#   scripts/slurm/start.sh [STATE_DIR]      # default: $SSMBENCH_SLURM_DIR or /tmp/ssmbench-slurm
#   scripts/slurm/stop.sh  [STATE_DIR]      # stops only what this script started
#
# It installs Debian's slurmctld, slurmd, slurm-client and munge if they are missing (as
# root), writes a one-node configuration into STATE_DIR, starts munged, slurmctld and slurmd
# by hand (PID files in STATE_DIR), and waits until the node is idle. Settings (environment):
#   SSMBENCH_SLURM_GPUS=2          fake GPUs declared as Gres=gpu:N (character devices made
#                                  with `mknod c 1 3`: scheduling only, there is no GPU)
#   SSMBENCH_SLURM_MIN_JOB_AGE=300 seconds a finished job stays visible to squeue; must be
#                                  >= 3 x slurm-init-seconds-before-status-checks of the
#                                  Snakemake profile, else the plugin falls back to sacct,
#                                  which fails without slurmdbd, and Snakemake waits forever
#   SSMBENCH_SLURM_PORT=6817       slurmctld's port (slurmd takes the next one)
#   SSMBENCH_SLURM_TIMEOUT=60      seconds to wait for the node to become idle
#
# Known constraints of Debian's Slurm 22.05 that this works around:
#   * auth/munge (22.05 has no auth/slurm); munged wants its key dir private (700) and its
#     socket dir world-executable (755); the socket is passed to Slurm in AuthInfo=socket=.
#   * no slurmdbd: sacct fails, so use `slurm-status-command: squeue` with MinJobAge above.
#   * the Snakemake job step removes SLURM_CONF before its inner `srun`, so the config must
#     also be at /etc/slurm/slurm.conf: a symlink to STATE_DIR/slurm.conf is made there (and
#     removed by stop.sh). An /etc/slurm/slurm.conf that is not ours is never touched.
set -euo pipefail

STATE=${1:-${SSMBENCH_SLURM_DIR:-/tmp/ssmbench-slurm}}
GPUS=${SSMBENCH_SLURM_GPUS:-2}
MIN_JOB_AGE=${SSMBENCH_SLURM_MIN_JOB_AGE:-300}
PORT=${SSMBENCH_SLURM_PORT:-6817}
TIMEOUT=${SSMBENCH_SLURM_TIMEOUT:-60}
NODE=ssmbench-node
PARTITION=debug
ETC_CONF=/etc/slurm/slurm.conf

say() { echo "slurm-start: $*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}

# Print the daemons' logs (the last lines of each) to stderr, then stop what was started.
fail_with_logs() {
  show_logs
  "$(dirname "$0")/stop.sh" "$STATE" || true
  die "$@"
}

show_logs() {
  local f
  for f in "$STATE"/log/munged.log "$STATE"/log/slurmctld.log "$STATE"/log/slurmd.log; do
    if [ -f "$f" ]; then
      echo "----- $f (last 40 lines)" >&2
      tail -n 40 "$f" >&2
    fi
  done
}

# True when the PID file names a live process whose command is $2.
alive() {
  local pidfile=$1 name=$2 pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

# --- 1. packages --------------------------------------------------------------------------
missing=()
for pkg in slurmctld slurmd slurm-client munge; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing Debian packages: ${missing[*]}; install them as root:
  apt-get install slurmctld slurmd slurm-client munge"
  say "installing ${missing[*]} (apt-get)"
  # Services are not started by the packages: we start our own daemons below.
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge >/dev/null
fi
[ "$(id -u)" = 0 ] || die "the daemons must be started as root (slurmd runs jobs as their users)"
for exe in munged slurmctld slurmd sinfo scontrol sbatch; do
  command -v "$exe" >/dev/null 2>&1 || [ -x "/usr/sbin/$exe" ] ||
    die "$exe not found although its package is installed"
done
PATH=$PATH:/usr/sbin

# --- 2. already running? -------------------------------------------------------------------
STATE=$(realpath -m "$STATE") # absolute: it goes into slurm.conf and the /etc/slurm link
if alive "$STATE/munged.pid" munged && alive "$STATE/slurmctld.pid" slurmctld &&
  alive "$STATE/slurmd.pid" slurmd; then
  say "already running (state in $STATE)"
  exit 0
fi
for name in munged slurmctld slurmd; do
  if alive "$STATE/$name.pid" "$name"; then
    die "$name of a previous start is still running (PID $(cat "$STATE/$name.pid")) but the" \
      "others are not; run scripts/slurm/stop.sh $STATE first"
  fi
done

# /etc/slurm/slurm.conf must be ours or absent (see the header).
if [ -e "$ETC_CONF" ] || [ -L "$ETC_CONF" ]; then
  if [ -L "$ETC_CONF" ] && [ "$(readlink "$ETC_CONF")" = "$STATE/slurm.conf" ]; then
    :
  elif [ -L "$ETC_CONF" ] && [ ! -e "$ETC_CONF" ]; then
    say "replacing the dangling link $ETC_CONF -> $(readlink "$ETC_CONF")"
  elif [ -L "$ETC_CONF" ] && [ -f "$(dirname "$(readlink "$ETC_CONF")")/.ssmbench-slurm" ]; then
    other=$(dirname "$(readlink "$ETC_CONF")")
    die "a test SLURM already runs on this machine (state in $other; one per machine, as" \
      "it owns $ETC_CONF). Reuse it: \`snakemake --profile slurm\` submits to it as it is" \
      "(\`scripts/slurm/start.sh $other\` says so and changes nothing); or wait until" \
      "its owner stops it (scripts/slurm/stop.sh $other), then start this one"
  else
    die "$ETC_CONF exists and is not ours: this machine has its own SLURM configuration," \
      "which this script will not replace. Use that SLURM, or move the file away."
  fi
fi

# --- 3. configuration ---------------------------------------------------------------------
mkdir -p "$STATE"
touch "$STATE/.ssmbench-slurm" # marks the folder as ours (stop.sh, stale-link check)
mkdir -p "$STATE/log" "$STATE/ctld" "$STATE/spool" "$STATE/dev"
install -d -m 700 "$STATE/munge-key"  # munged: the key's folder must be private
install -d -m 755 "$STATE/munge-run"  # and the socket's folder world-executable
install -d -m 700 "$STATE/munge-lib"
[ -s "$STATE/munge-key/munge.key" ] ||
  (umask 077 && head -c 1024 /dev/urandom >"$STATE/munge-key/munge.key")
chmod 400 "$STATE/munge-key/munge.key"
SOCKET=$STATE/munge-run/munge.socket.2

# slurmctld only runs on the host named in SlurmctldHost: this machine's short name.
CTLD_HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
MEM_MB=$((MEM_MB > 2048 ? MEM_MB - 1024 : MEM_MB)) # leave some for the system

# Fake GPUs: character devices (file-less GPUs are dropped by slurmd).
gres_node=""
: >"$STATE/gres.conf"
if [ "$GPUS" -gt 0 ]; then
  for ((i = 0; i < GPUS; i++)); do
    [ -c "$STATE/dev/gpu$i" ] || mknod "$STATE/dev/gpu$i" c 1 3
  done
  gres_node=" Gres=gpu:$GPUS"
  echo "NodeName=$NODE Name=gpu File=$STATE/dev/gpu[0-$((GPUS - 1))]" >"$STATE/gres.conf"
fi

cat >"$STATE/slurm.conf" <<EOF
# Written by scripts/slurm/start.sh: a one-node test cluster (state in $STATE).
ClusterName=ssmbench
SlurmctldHost=$CTLD_HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
GresTypes=gpu
ReturnToService=2
# Finished jobs stay visible to squeue this long (see the header).
MinJobAge=$MIN_JOB_AGE
# Jobs get SIGTERM, then this many seconds, then SIGKILL (scancel, time limit).
KillWait=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB$gres_node State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

if [ ! -L "$ETC_CONF" ] || [ "$(readlink "$ETC_CONF")" != "$STATE/slurm.conf" ]; then
  if [ ! -d /etc/slurm ]; then
    mkdir -p /etc/slurm
    touch "$STATE/.made-etc-slurm" # stop.sh removes the folder again if it is empty
  fi
  ln -sfn "$STATE/slurm.conf" "$ETC_CONF"
fi
export SLURM_CONF=$STATE/slurm.conf

# --- 4. daemons ---------------------------------------------------------------------------
say "starting munged, slurmctld, slurmd (state in $STATE)"
munged --force --key-file="$STATE/munge-key/munge.key" --socket="$SOCKET" \
  --pid-file="$STATE/munged.pid" --log-file="$STATE/log/munged.log" \
  --seed-file="$STATE/munge-lib/munged.seed" ||
  fail_with_logs "munged did not start"
for _ in $(seq 50); do
  [ -S "$SOCKET" ] && break
  sleep 0.1
done
[ -S "$SOCKET" ] || fail_with_logs "munged started but its socket $SOCKET did not appear"

slurmctld -c -f "$SLURM_CONF" || fail_with_logs "slurmctld did not start"
slurmd -N "$NODE" -f "$SLURM_CONF" || fail_with_logs "slurmd did not start"

# --- 5. wait for the node -----------------------------------------------------------------
deadline=$((SECONDS + TIMEOUT))
state=""
while [ $SECONDS -lt $deadline ]; do
  state=$(sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
if [ "$state" != idle ]; then
  echo "----- sinfo" >&2
  sinfo -N -l 2>&1 >&2 || true
  sinfo -R 2>&1 >&2 || true
  fail_with_logs "node $NODE is not idle after ${TIMEOUT}s" \
    "(state: '${state:-no answer from slurmctld}'); see the daemons' logs above"
fi
say "node $NODE idle: $CPUS CPUs, ${MEM_MB} MB, $GPUS fake GPU(s), partition $PARTITION" \
  "(SLURM_CONF=$SLURM_CONF, also at $ETC_CONF)"
