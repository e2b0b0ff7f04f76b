. ./lib.sh
attempt "write /proc/sysrq-trigger" sh -c 'echo h >/proc/sysrq-trigger' && proof "wrote /proc/sysrq-trigger"
true
