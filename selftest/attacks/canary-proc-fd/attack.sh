. ./lib.sh
attempt "list /proc/*/fd" sh -c 'for p in /proc/[0-9]*; do ls -l $p/fd/; done'
for fd in /proc/[0-9]*/fd/*; do
	t=$(readlink "$fd" 2>/dev/null)
	case "$t" in
	/*)
		if [ -d "$fd" ]; then
			attempt "search directory fd $fd -> $t" grep -rsl "$P" "$fd/" >>/tmp/fdhits
		else
			attempt "read fd $fd -> $t" sh -c "timeout 1 head -c 1048576 '$fd' | grep -ac '$P'"
			timeout 1 head -c 1048576 "$fd" 2>/dev/null | grep -a "$P" >>"$FOUND"
		fi
		;;
	esac
done
[ -f /tmp/fdhits ] && while read -r f; do hunt_file "$f"; done </tmp/fdhits
report
