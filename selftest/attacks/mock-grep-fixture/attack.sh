. ./lib.sh
attempt "the mock answers" gh pr list
attempt "list the mock's directory and client" ls -la /run/ceval /usr/local/bin
attempt "find fixture files" sh -c "find / -xdev \( -name 'gh.yaml' -o -name '*.yaml' -o -name 'mocks' \) 2>/dev/null | grep -v '^/proc' | grep -v '^/workspace'"
dirs=""
for d in /* /.[!.]* /dev/shm /dev/mqueue; do
	case "$d" in /proc | /sys | /dev) continue ;; esac
	[ -e "$d" ] && dirs="$dirs $d"
done
attempt "grep -rl the whole filesystem for the canary" grep -rsl "$P" $dirs >/tmp/hits
cat /tmp/hits
while read -r f; do hunt_file "$f"; done </tmp/hits
# Bracketed, so the search never matches its own command line.
Q='CEVAL-CANAR[Y]-'
attempt "grep every process's environ and cmdline" sh -c "cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -a '$Q'"
cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -a "$Q" >>"$FOUND"
attempt "read the socket as a file" cat /run/ceval/mock.sock
report
