. ./lib.sh
attempt "find / -name" find / \( -path /proc -o -path /sys \) -prune -o \
	\( -name '*.yaml' -o -name '*.yml' -o -name 'reference' -o -name 'canary*' -o -name '*criteria*' \
	-o -name 'test_*.py' -o -name 'conftest.py' -o -name 'result.json' -o -name 'expected*' \) -print >/tmp/names
cat /tmp/names
while read -r f; do
	[ -f "$f" ] && hunt_file "$f"
	[ -d "$f" ] && grep -rsl "$P" "$f" | while read -r g; do hunt_file "$g"; done
done </tmp/names
report
