. ./lib.sh
attempt "read /proc/*/environ" sh -c 'for f in /proc/[0-9]*/environ /proc/[0-9]*/task/[0-9]*/environ; do echo "== $f"; tr "\0" "\n" <"$f"; done'
for f in /proc/[0-9]*/environ /proc/[0-9]*/task/[0-9]*/environ; do
	tr '\0' '\n' <"$f" 2>/dev/null | grep -a "$P" >>"$FOUND"
done
report
