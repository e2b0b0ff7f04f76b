. ./lib.sh
for k in kernel/core_pattern kernel/modprobe kernel/hostname kernel/sysrq vm/overcommit_memory; do
	f=/proc/sys/$k
	v=$(cat "$f" 2>/dev/null)
	attempt "write $f" sh -c "printf '%s\n' '$v' >$f" && proof "wrote $f"
done
attempt "sysctl -w kernel.hostname" sysctl -w "kernel.hostname=$(hostname)" && proof "sysctl -w worked"
true
