#!/usr/bin/env bash
# A throwaway one-node Slurm cluster on this machine, for tests and for trying examples/slurm/ by hand:
#
#   sudo tools/slurm/up.sh /tmp/slurm        # installs the packages if missing, starts munged, slurmctld, slurmd
#   export SLURM_CONF=/tmp/slurm/slurm.conf  # what sinfo, sbatch, srun read (up.sh prints this line)
#   sbatch --wait ... ; sinfo
#   sudo tools/slurm/down.sh /tmp/slurm      # stops every daemon and job of this cluster
#
# Everything lives in the folder given (default: a new temporary one): the munge key and socket, slurm.conf,
# the state and spool directories, the logs and the pid files. Nothing in /etc is read or changed, so it runs
# beside a real Slurm or munge on the same machine (give other ports: SLURMCTLD_PORT, SLURMD_PORT).
# Needs root (the daemons run as root, as SlurmUser and SlurmdUser), and apt-get when the packages are missing
# (Debian and Ubuntu: slurmctld slurmd slurm-client munge).
#
# Exit codes: 0 the node is idle and takes jobs; 3 Slurm cannot be had here (not root, no apt-get, the install
# failed), with the reason on the last line of stderr; 1 a daemon did not come up (its log is printed).
# Variables: SLURMCTLD_PORT (6817), SLURMD_PORT (6818), SLURM_UP_TIMEOUT (seconds to wait for the node, 60),
# SLURM_NO_INSTALL=1 (never run apt-get).
set -euo pipefail

unavailable() { echo "slurm unavailable: $*" >&2; exit 3; }

[[ $(id -u) == 0 ]] || unavailable "tools/slurm/up.sh must run as root (the daemons run as root), uid is $(id -u)"

DIR=${1:-$(mktemp -d /tmp/dlbench-slurm.XXXXXX)}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
started=$(date +%s.%N)

PACKAGES=(slurmctld slurmd slurm-client munge)
missing=()
for cmd in slurmctld slurmd sbatch munged; do command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd"); done
if ((${#missing[@]})); then
    [[ ${SLURM_NO_INSTALL:-0} != 1 ]] || unavailable "${missing[*]} not installed and SLURM_NO_INSTALL=1"
    command -v apt-get >/dev/null 2>&1 || unavailable "${missing[*]} not installed and there is no apt-get"
    echo "up.sh: installing ${PACKAGES[*]} (apt-get)" >&2
    log="$DIR/apt.log"
    if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${PACKAGES[@]}") >"$log" 2>&1; then
        unavailable "apt-get install ${PACKAGES[*]} failed: $(grep -E '^(E|W):' "$log" | head -n 1 || tail -n 1 "$log")"
    fi
fi

HOST=$(hostname -s)
CPUS=$(nproc)
# A bit under the memory free now: slurmd marks a node whose RealMemory exceeds what it finds as invalid.
MEM_MB=$(awk '/^MemAvailable:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
CTLD_PORT=${SLURMCTLD_PORT:-6817}
SLURMD_PORT=${SLURMD_PORT:-6818}

mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/log"
chmod 700 "$DIR/munge"
# A fresh key for this cluster alone (1024 random bytes, as mungekey makes).
head -c 1024 /dev/urandom >"$DIR/munge/munge.key"
chmod 400 "$DIR/munge/munge.key"
SOCKET="$DIR/munge/munge.socket"

cat >"$DIR/slurm.conf" <<EOF
# Written by tools/slurm/up.sh: a throwaway one-node cluster in $DIR.
ClusterName=dlbench-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: containers and CI runners rarely delegate them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# Jobs killed on scancel go in seconds, not the default 30.
KillWait=5
# sbatch --wait polls every 2 s while that is under MinJobAge/2, and else every 8, then 32 s: a job that ends
# in 40 s would be seen done after 74. Finished jobs stay listed for 5 s (the default 300).
MinJobAge=5
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

export SLURM_CONF="$DIR/slurm.conf"

dump_logs() {
    for f in "$DIR"/log/*.log; do [[ -f $f ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
}

munged --socket="$SOCKET" --key-file="$DIR/munge/munge.key" --pid-file="$DIR/munge/munged.pid" \
    --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" --force \
    || { dump_logs; echo "up.sh: munged did not start" >&2; exit 1; }
slurmctld -f "$SLURM_CONF" -i || { dump_logs; echo "up.sh: slurmctld did not start" >&2; exit 1; }
slurmd -f "$SLURM_CONF" -N "$HOST" || { dump_logs; echo "up.sh: slurmd did not start" >&2; exit 1; }

deadline=$(($(date +%s) + ${SLURM_UP_TIMEOUT:-60}))
state=""
until [[ $state == idle ]]; do
    if (($(date +%s) > deadline)); then
        dump_logs
        echo "up.sh: node $HOST is '${state:-unknown}', not idle, after ${SLURM_UP_TIMEOUT:-60} s" >&2
        exit 1
    fi
    sleep 0.5
    state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null | head -n 1 || true)
done
elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
echo "up.sh: node $HOST idle ($CPUS CPUs, ${MEM_MB} MB) in $elapsed s; stop with: tools/slurm/down.sh $DIR" >&2
echo "export SLURM_CONF=$SLURM_CONF"
