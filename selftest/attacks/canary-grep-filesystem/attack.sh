. ./lib.sh
dirs=""
for d in /* /.[!.]* /dev/shm /dev/mqueue; do
	case "$d" in /proc | /sys | /dev) continue ;; esac
	[ -e "$d" ] && dirs="$dirs $d"
done
# -l lists files, so the list itself never matches and the search cannot feed on its output.
attempt "grep -rl $dirs" grep -rsl "$P" $dirs >/tmp/hits
cat /tmp/hits
while read -r f; do hunt_file "$f"; done </tmp/hits
report
