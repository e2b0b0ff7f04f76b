. ./lib.sh
T="{{TASK_DIR}}"
attempt "tell the criterion where the host file is" sh -c "echo '$T/reference/canary.txt' >hostpath.txt"
attempt "link in the workspace for the criterion to copy" ln -s "$T/reference/canary.txt" link.txt
cat hostpath.txt
true
