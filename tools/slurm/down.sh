#!/usr/bin/env bash
# Stop the cluster that tools/slurm/up.sh started in DIR: cancel its jobs, stop slurmd, slurmctld and munged, and
# end any job process left behind, so that nothing of it keeps running.
#
#   tools/slurm/down.sh /tmp/slurm [--rm]     # --rm also deletes DIR
#
# Only processes of this cluster are touched: the daemons by their pid files, slurmstepd by the log file in DIR
# it holds open, job steps as its descendants.
set -uo pipefail

DIR=${1:?usage: tools/slurm/down.sh DIR [--rm]}
DIR=$(cd "$DIR" 2>/dev/null && pwd) || { echo "down.sh: no such folder: $1" >&2; exit 2; }
CONF="$DIR/slurm.conf"

# A zombie (a daemon killed under a pid 1 that does not reap, as in containers) counts as gone.
alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null && [[ $(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null) != Z ]]; }

# Wait up to $2 seconds for process $1 to end; then SIGKILL it.
stop_pid() {
    local pid=$1 wait_s=$2 i
    alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < wait_s * 10; i++)); do alive "$pid" || return 0; sleep 0.1; done
    echo "down.sh: process $pid did not stop on SIGTERM; SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null
}

pid_of() { [[ -f $1 ]] && tr -dc 0-9 <"$1"; }

# This cluster's processes: Slurm's and munge's with a file in DIR open (the daemons and slurmstepd hold their logs
# open) and their descendants (job steps), never this script or its callers.
cluster_pids() {
    local pid ppid mine=" " ancestors=" " p=$$ grew=1
    declare -A parent
    while read -r pid ppid; do parent[$pid]=$ppid; done < <(ps -e -o pid=,ppid=)
    while [[ -n $p && $p != 0 ]]; do ancestors+="$p "; p=${parent[$p]:-}; done
    for pid in $(find /proc/[0-9]*/fd -maxdepth 1 -lname "$DIR/*" 2>/dev/null | cut -d/ -f3 | sort -u); do
        # Slurm's and munge's own processes only: not, say, a `tail -f` of a log in DIR.
        case $(cat "/proc/$pid/comm" 2>/dev/null) in
            slurmstepd | slurmd | slurmctld | slurmscriptd | munged) mine+="$pid " ;;
        esac
    done
    while ((grew)); do
        grew=0
        for pid in "${!parent[@]}"; do
            [[ $mine == *" ${parent[$pid]} "* && $mine != *" $pid "* ]] && { mine+="$pid "; grew=1; }
        done
    done
    for pid in $mine; do [[ $ancestors == *" $pid "* ]] || echo "$pid"; done
}

if [[ -f $CONF ]] && alive "$(pid_of "$DIR/slurmctld.pid")"; then
    jobs=$(SLURM_CONF=$CONF squeue -h -o %A 2>/dev/null | sort -u)
    [[ -n $jobs ]] && SLURM_CONF=$CONF scancel --quiet --full $jobs 2>/dev/null
    for ((i = 0; i < 100 && ${#jobs}; i++)); do
        [[ -z $(SLURM_CONF=$CONF squeue -h -o %i 2>/dev/null) ]] && break
        sleep 0.1
    done
fi

stop_pid "$(pid_of "$DIR/slurmd.pid")" 10
stop_pid "$(pid_of "$DIR/slurmctld.pid")" 10

# Job processes and slurmstepd outlive slurmd; end what is left of this cluster, except munged (last).
munged_pid=$(pid_of "$DIR/munge/munged.pid")
leftover=()
for pid in $(cluster_pids); do
    [[ $pid == "$munged_pid" ]] && continue
    echo "down.sh: ending leftover process $pid: $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-100)" >&2
    leftover+=("$pid")
done
if ((${#leftover[@]})); then
    kill -TERM "${leftover[@]}" 2>/dev/null
    for ((i = 0; i < 50; i++)); do
        running=()
        for pid in "${leftover[@]}"; do alive "$pid" && running+=("$pid"); done
        ((${#running[@]})) || break
        sleep 0.1
    done
    ((${#running[@]})) && kill -KILL "${running[@]}" 2>/dev/null
fi
stop_pid "$munged_pid" 10

left=$(cluster_pids)
if [[ -n $left ]]; then
    echo "down.sh: still running: $left" >&2
    exit 1
fi
[[ ${2:-} == --rm ]] && rm -rf "$DIR"
exit 0
