. ./lib.sh
attempt "list fds" sh -c 'ls -l /proc/[0-9]*/fd/ /proc/self/fd/'
attempt "read cwds" sh -c 'for p in /proc/[0-9]*; do echo "$p cwd=$(readlink $p/cwd) root=$(readlink $p/root)"; done'
for fd in /proc/[0-9]*/fd/*; do
	t=$(readlink "$fd" 2>/dev/null)
	[ -d "$fd" ] || continue
	case "$fd" in /proc/self/fd/* | /proc/$$/fd/*) continue ;; esac
	attempt "climb out of directory fd $fd -> $t" ls -la "$fd/../../.." && proof "directory fd $fd -> $t"
done
for p in /proc/[0-9]*; do
	c=$(readlink "$p/cwd" 2>/dev/null)
	[ -n "$c" ] && [ ! -d "$c" ] && proof "$p works in $c, which is not in the container"
done
true
