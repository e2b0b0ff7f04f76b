. ./lib.sh
attempt "read this run's UID map" cat /proc/self/uid_map
attempt "read this run's GID map" cat /proc/self/gid_map
# The agent's host UID (2000 inside): a run that shares it with other runs shares every
# per-UID kernel quota with them (inotify instances, message-queue bytes, pipe pages), so
# holding them all here would deny the other runs.
host=$(awk '$1 <= 2000 && 2000 < $1 + $3 { printf "%.0f", $2 + 2000 - $1 }' /proc/self/uid_map)
info "agent UID 2000 is host UID ${host:-unmapped}"
[ "$host" = 2000 ] && proof "the agent is host UID 2000, as every other run's agent: they share per-UID quotas"
true
