. ./lib.sh
attempt "read mountinfo" cat /proc/self/mountinfo
# Field 5 is the mount point, 6 its options; after the lone "-" come the type and the source.
awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { t = $(i + 1); break } }
	t !~ /^(overlay|proc|tmpfs|devpts|mqueue|sysfs)$/ && !($5 == "/.ceval/init" && $6 ~ /^ro/) { print }' /proc/self/mountinfo >/tmp/host
[ -s /tmp/host ] && proof "host mounts: $(cat /tmp/host)"
awk '$6 ~ /^rw/ { print $5 }' /proc/self/mountinfo >/tmp/rw
attempt "list read-write mounts" cat /tmp/rw
true
