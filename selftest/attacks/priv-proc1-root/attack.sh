. ./lib.sh
me=$(stat -L -c %d:%i /)
for p in /proc/[0-9]*; do
	r=$(stat -L -c %d:%i "$p/root" 2>/dev/null)
	attempt "stat $p/root" stat -L -c '%d:%i %n' "$p/root"
	[ -n "$r" ] && [ "$r" != "$me" ] && proof "$p/root is another root ($r, ours is $me)"
done
attempt "read the task through /proc/1/root" cat "/proc/1/root{{TASK_DIR}}/task.yaml"
hunt_file "/proc/1/root{{TASK_DIR}}/task.yaml"
attempt "climb out of /proc/1/root" ls -la /proc/1/root/../../..
report
