. ./lib.sh
attempt "find / -type s" find / \( -path /proc -o -path /sys \) -prune -o -type s -print >/tmp/socks
cat /tmp/socks
[ -s /tmp/socks ] && proof "sockets reachable: $(cat /tmp/socks | tr '\n' ' ')"
for s in /run/containerd/containerd.sock /var/run/containerd/containerd.sock /run/containerd/s /tmp/ceval-containerd/containerd.sock \
	/var/run/docker.sock /run/docker.sock /run/podman/podman.sock /run/crio/crio.sock /run/containerd/io.containerd.runtime.v2.task; do
	attempt "stat $s" stat "$s" && proof "$s exists"
done
attempt "read /proc/net/unix" cat /proc/net/unix
grep -q -e containerd -e shim -e docker /proc/net/unix && proof "engine socket in /proc/net/unix"
true
