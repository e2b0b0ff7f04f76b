. ./lib.sh
attempt dmesg dmesg >/tmp/dmesg && [ -s /tmp/dmesg ] && proof "read the kernel log"
attempt "read /dev/kmsg" timeout 1 head -n 1 /dev/kmsg && proof "read /dev/kmsg"
attempt "read /proc/kmsg" timeout 1 head -c 1 /proc/kmsg && proof "read /proc/kmsg"
attempt "read /proc/kallsyms" sh -c 'head -n 3 /proc/kallsyms'
grep -q -v '^0000000000000000 ' /proc/kallsyms 2>/dev/null && proof "kernel addresses visible in /proc/kallsyms"
true
