. ./lib.sh
attempt "read mountinfo" cat /proc/self/mountinfo
# Field 4 is the root within the mounted filesystem, 5 the mount point, 6 its options; after
# the lone "-" come the type and the source. In the run's user namespace runc cannot mknod,
# so the standard character devices are the host's own nodes bound one by one (and /dev/null
# over masked /proc files): those, and only at those places, are expected.
awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { t = $(i + 1); break } }
	t == "devtmpfs" && $4 ~ /^\/(null|zero|full|random|urandom|tty)$/ && ($5 == "/dev" $4 || ($4 == "/null" && $5 ~ /^\/proc\/[a-z_]+$/)) { next }
	t !~ /^(overlay|proc|tmpfs|devpts|mqueue|sysfs)$/ && !(($5 == "/.ceval/init" || $5 == "/.ceval/supervisor") && $6 ~ /^ro/) { print }' /proc/self/mountinfo >/tmp/host
# /.ceval/supervisor is one read-only FIFO (the init's watch on ceval), no way into the host.
[ -p /.ceval/supervisor ] || { [ -e /.ceval/supervisor ] && proof "/.ceval/supervisor is not a FIFO"; }
[ -s /tmp/host ] && proof "host mounts: $(cat /tmp/host)"
awk '$6 ~ /^rw/ { print $5 }' /proc/self/mountinfo >/tmp/rw
attempt "list read-write mounts" cat /tmp/rw
true
