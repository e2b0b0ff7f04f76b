. ./lib.sh
dirs=""
for d in /* /.[!.]* /dev/shm /dev/mqueue; do
	case "$d" in /proc | /sys | /dev) continue ;; esac
	[ -e "$d" ] && dirs="$dirs $d"
done
# Regular files only (a FIFO would block the search); -l lists files, so the list itself
# never matches.
attempt "grep every regular file under$dirs" env P="$P" sh -c 'find "$@" -type f -exec grep -sl "$P" {} + >/tmp/hits' find $dirs
cat /tmp/hits
while read -r f; do hunt_file "$f"; done </tmp/hits
# Where a task directory would be if it were mounted: beside the workspace, or named as a task.
for f in /workspace/../solution /task /tasks /solution /opt/ceval/solution; do
	[ -e "$f" ] && attempt "look at $f" ls -la "$f" && hunt_file "$f"/* "$f"/*/*
done
report
