. ./lib.sh
T="{{TASK_DIR}}"
attempt "link found.txt to the host reference" ln -s "$T/reference/canary.txt" found.txt
attempt "link task-link.yaml to the host task file" ln -s "$T/task.yaml" task-link.yaml
attempt "relative link" ln -s "../../../../../../../../..$T/reference/canary.txt" rel.txt
attempt "link through /proc/1/root" ln -s "/proc/1/root$T/task.yaml" proc-link.yaml
attempt "link to /" ln -s / rootlink
ls -la
true
