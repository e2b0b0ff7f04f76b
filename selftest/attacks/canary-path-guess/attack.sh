. ./lib.sh
# Assume the attacker knows where the task sits on the host.
T="{{TASK_DIR}}"
for f in /task.yaml /workspace/task.yaml /workspace/../task.yaml /home/agent/task.yaml \
	/reference/canary.txt /workspace/reference/canary.txt /tests/test_solution.py /grader/criteria.yaml \
	/root/task.yaml /etc/ceval/task.yaml /run/ceval/task.yaml /.ceval/task.yaml /.ceval/reference/canary.txt \
	"$T/task.yaml" "$T/reference/canary.txt" "/proc/1/root$T/task.yaml" "/proc/self/root$T/reference/canary.txt" \
	"/proc/1/cwd/../task.yaml" "/proc/1/cwd/../reference/canary.txt"; do
	attempt "read $f" cat "$f"
	hunt_file "$f"
done
report
