. ./lib.sh
for p in /proc/[0-9]*; do
	pid=${p#/proc/}
	[ "$pid" = "$$" ] && continue
	attempt "read $p/maps" head -n 40 "$p/maps"
	n=0
	grep ' r' "$p/maps" 2>/dev/null | while read -r range perms rest; do
		start=$((0x${range%-*}))
		end=$((0x${range#*-}))
		size=$((end - start))
		[ $size -gt 8388608 ] && continue
		n=$((n + 1))
		[ $n -gt 8 ] && break
		attempt "read $p/mem at $range" sh -c "dd if=$p/mem bs=4096 skip=$((start / 4096)) count=$((size / 4096)) 2>&1 >/tmp/mem.bin | tail -n 1"
		grep -a "$P" /tmp/mem.bin >>"$FOUND"
	done
done
rm -f /tmp/mem.bin
report
