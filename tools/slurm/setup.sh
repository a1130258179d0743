#!/bin/sh
# Start a private single-node Slurm for the tests (see ../../../shared/docs/slurm-single-node.md):
#   tools/slurm/setup.sh DIR     installs slurm-wlm and munge when missing (Debian, without
#                                recommends), starts munged when it is not running, writes
#                                DIR/slurm.conf and starts slurmctld and slurmd on it; it prints
#                                SLURM_CONF=DIR/slurm.conf once the node is idle.
#   tools/slurm/setup.sh -stop DIR  stops the daemons it started (by their pid files; munged
#                                only when this script started it).
# Ports: SLURMCTLD_PORT (default 6817) and SLURMD_PORT (default 6818). Needs root.
# Exit status 0 only when the node accepts jobs.
set -eu

if [ "${1:-}" = "-stop" ]; then
	dir=$2
	for p in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
		[ -f "$p" ] || continue
		pid=$(cat "$p")
		kill "$pid" 2>/dev/null || continue
		i=0 # wait until it has exited (or is a zombie of the caller), at most 10 s
		while [ -d "/proc/$pid" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null && [ $i -lt 100 ]; do
			i=$((i + 1)); sleep 0.1
		done
	done
	exit 0
fi
dir=${1:?usage: setup.sh DIR | setup.sh -stop DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
	echo "installing slurm-wlm and munge" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null; }
fi

if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
	mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
	[ -f /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
	chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
	chmod 400 /etc/munge/munge.key
	munged --force
	cp /run/munge/munged.pid "$dir/munged.pid" 2>/dev/null || true # started here: -stop stops it
	i=0
	until munge -n 2>/dev/null | unmunge >/dev/null 2>&1; do
		i=$((i + 1)); [ $i -lt 50 ] || { echo "munged did not start" >&2; exit 1; }; sleep 0.1
	done
fi

host=$(hostname -s)
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cat >"$dir/slurm.conf" <<CONF
ClusterName=fp8lab
SlurmctldHost=$host
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmdPort=${SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
NodeName=$host CPUs=$(nproc) RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld
slurmd
i=0
until sinfo -h -o %T 2>/dev/null | grep -q idle; do
	i=$((i + 1))
	if [ $i -ge 150 ]; then
		echo "the Slurm node did not become idle within 15 s; logs in $dir/log:" >&2
		tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
		exit 1
	fi
	sleep 0.1
done
echo "SLURM_CONF=$SLURM_CONF"
