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
echo "at most $max processes seen" >&3
[ $max -gt 64 ] && proof "$max processes under a pids limit of 64"
printf '\nRC fork bomb 0\n' >&3
