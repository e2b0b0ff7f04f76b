. ./lib.sh
T="{{TASK_DIR}}"
attempt "link /output/found.txt to the host reference" ln -s "$T/reference/canary.txt" /output/found.txt
attempt "relative link in /output" ln -s "../../../../../../../../..$T/reference/canary.txt" /output/rel.txt
attempt "link through /proc/1/root" ln -s "/proc/1/root$T/task.yaml" /output/proc-link.yaml
attempt "link /output/rootlink to /" ln -s / /output/rootlink
ls -la /output
true
