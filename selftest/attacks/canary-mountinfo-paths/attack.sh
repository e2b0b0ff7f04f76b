. ./lib.sh
attempt "read mountinfo" cat /proc/self/mountinfo
paths=$(tr ' ,=' '\n\n\n' </proc/self/mountinfo | grep '^/' | sort -u)
for h in $paths "{{TASK_DIR}}" "$(dirname "{{TASK_DIR}}")"; do
	for q in "$h" "$(dirname "$h")" "/proc/1/root$h"; do
		attempt "list host path $q" ls -la "$q"
		[ -d "$q" ] && case "$q" in / | /proc | /proc/* | /sys | /sys/* | /dev | /dev/*) ;; *) grep -rsl "$P" "$q" 2>/dev/null | while read -r f; do hunt_file "$f"; done ;; esac
	done
done
report
