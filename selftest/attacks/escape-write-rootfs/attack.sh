. ./lib.sh
for d in / /etc /bin /sbin /usr/bin /usr/local/bin /var /var/tmp /run /root /home /.ceval /dev /dev/pts /sys /sys/fs /sys/kernel /proc /proc/sys/kernel; do
	attempt "write $d" sh -c ": >$d/.ceval-selftest" && proof "wrote $d"
done
attempt "trojan grep on the system PATH" cp /bin/busybox /usr/local/bin/grep && proof "planted /usr/local/bin/grep"
attempt "append to /etc/passwd" sh -c 'echo "evil::0:0::/:/bin/sh" >>/etc/passwd' && proof "wrote /etc/passwd"
attempt "write /.ceval/init" sh -c ': >/.ceval/init' && proof "wrote the init"
# /dev/mqueue is writable but belongs to the container's own IPC namespace and dies with it.
attempt "write /dev/mqueue (container-private IPC namespace)" sh -c ': >/dev/mqueue/ceval-selftest'
true
