. ./lib.sh
for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/kpagecount /proc/acpi; do
	attempt "read $f" head -c 64 "$f" >/tmp/b
	[ -s /tmp/b ] && proof "read $(wc -c </tmp/b) bytes of $f"
done
for d in /sys/firmware /sys/kernel/debug /sys/kernel/security; do
	attempt "list $d" ls "$d" >/tmp/l
	[ -s /tmp/l ] && proof "listed $d: $(head -c 200 /tmp/l)"
done
true
