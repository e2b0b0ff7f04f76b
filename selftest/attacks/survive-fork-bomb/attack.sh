. ./lib.sh
echo "ATTEMPT fork bomb" >&3
# Each b waits for its pipeline, so the processes stay alive and double every generation.
(
	b() { b | b; }
	b
) 2>/dev/null &
# Count with shell builtins only: once the bomb hits the pids limit, nothing can fork.
max=0
i=0
while [ $i -lt 3000 ]; do
	n=0
	for p in /proc/[0-9]*; do n=$((n + 1)); done
	[ $n -gt $max ] && max=$n
	i=$((i + 1))
done
# Only a hint: /proc is read while processes die and are born, so one listing can hold more
# entries than ever lived at once. Whether the bomb got past pids.max is judged by ceval's
# own reading of the container's cgroup (peak_pids against the attested pids.max).
echo "at most $max /proc entries seen in one listing" >&3
printf '\nRC fork bomb 0\n' >&3
