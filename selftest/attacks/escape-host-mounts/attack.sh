. ./lib.sh
attempt "read mountinfo" cat /proc/self/mountinfo
# Field 5 is the mount point, 6 its options; after the lone "-" come the type and the source.
awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { t = $(i + 1); break } }
	t !~ /^(overlay|proc|tmpfs|devpts|mqueue|sysfs)$/ && !(($5 == "/.ceval/init" || $5 == "/.ceval/supervisor") && $6 ~ /^ro/) { print }' /proc/self/mountinfo >/tmp/host
# /.ceval/supervisor is one read-only FIFO (the init's watch on ceval), no way into the host.
[ -p /.ceval/supervisor ] || { [ -e /.ceval/supervisor ] && proof "/.ceval/supervisor is not a FIFO"; }
[ -s /tmp/host ] && proof "host mounts: $(cat /tmp/host)"
awk '$6 ~ /^rw/ { print $5 }' /proc/self/mountinfo >/tmp/rw
attempt "list read-write mounts" cat /tmp/rw
true
