. ./lib.sh
T="{{TASK_DIR}}"
attempt "link link.txt to the host reference" ln -s "$T/reference/canary.txt" link.txt
attempt "relative link" ln -s "../../../../../../../../..$T/reference/canary.txt" rel.txt
attempt "link to /" ln -s / rootlink
attempt "read the host file through the link in the container" cat link.txt
ls -la
true
