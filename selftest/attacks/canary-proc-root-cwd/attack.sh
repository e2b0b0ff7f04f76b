. ./lib.sh
attempt "list /proc/*/root and /proc/*/cwd" sh -c 'for p in /proc/[0-9]*; do echo "== $p root=$(readlink $p/root) cwd=$(readlink $p/cwd)"; ls -la $p/root/ $p/cwd/; done'
for p in /proc/[0-9]*; do
	for d in "$p/cwd/" "$p/root/etc" "$p/root/home" "$p/root/root" "$p/root/run" "$p/root/tmp" "$p/root/var" "$p/root/workspace" "$p/root/.ceval"; do
		grep -rsl "$P" "$d" 2>/dev/null | grep -v '^/tmp/found.txt$' | while read -r f; do hunt_file "$f"; done
	done
done
report
