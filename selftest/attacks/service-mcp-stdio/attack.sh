. ./lib.sh
relay() { /.ceval/init --mcp-relay notes:7000; }
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
attempt "a session through ceval's relay answers (control)" sh -c "echo '$init' | timeout 10 /.ceval/init --mcp-relay notes:7000 | grep -q result" || info "the stdio server did not answer"
# More sessions at once than the bridge serves (8): each held open, each asking initialize.
for i in $(seq 1 12); do
	( (echo "$init"; sleep 8) | timeout 10 /.ceval/init --mcp-relay notes:7000 >/tmp/s.$i 2>&1 ) &
done
sleep 3
n=$(grep -l result /tmp/s.* 2>/dev/null | wc -l)
info "$n of 12 sessions held at once were served"
[ "$n" -gt 8 ] && proof "the bridge served $n sessions at once (more than 8)"
wait
# Injection through the protocol: shell syntax in every field the server reads.
for inj in '$(cat /workspace/secret.txt)' '`cat /workspace/secret.txt`' '"; cat /workspace/secret.txt; "' "\$SERVICE_SECRET"; do
	line='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"'"$inj"'","arguments":{"x":"'"$inj"'"}}}'
	attempt "inject $inj" sh -c "printf '%s\n' '$init' '$line' | timeout 5 /.ceval/init --mcp-relay notes:7000 >/tmp/inj 2>&1"
	hunt_file /tmp/inj
done
attempt "the bridge's port on the agent's own loopback" sh -c 'echo x | timeout 3 nc -w 2 127.0.0.1 7000' && proof "reached port 7000 on the agent's own loopback"
attempt "processes of other users in /proc" sh -c 'for d in /proc/[0-9]*; do awk -v d="$d" "/^Uid:/ && \$2 != 2000 {print d, \$2}" $d/status 2>/dev/null; done | grep . && exit 0 || exit 1' && proof "saw another user's process in /proc"
cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' >/tmp/proc.txt
hunt_file /tmp/proc.txt
attempt "search every file for the secret" sh -c 'find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -print 2>/dev/null >/tmp/files'
while read -r f; do hunt_file "$f"; done </tmp/files
report
info "kill -9 -1"
kill -9 -1
