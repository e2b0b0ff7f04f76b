. ./lib.sh
T="{{TASK_DIR}}"
attempt "hard link to the host reference" ln "$T/reference/canary.txt" found.txt && proof "hard-linked the reference"
attempt "hard link through /proc/1/root" ln "/proc/1/root$T/reference/canary.txt" found.txt && proof "hard-linked the reference"
attempt "hard link to /etc/passwd" ln /etc/passwd passwd && proof "hard-linked /etc/passwd"
attempt "hard link to the init" ln /.ceval/init init && proof "hard-linked the init"
true
