. ./lib.sh
attempt "the declared port answers (control)" sh -c 'timeout 5 wget -qO- http://api:8080/ok.txt' || info "the declared port did not answer"
for a in api 127.0.10.1 127.0.0.1; do
	attempt "undeclared port 9090 of $a" sh -c "timeout 5 wget -qO- http://$a:9090/s.txt >/tmp/got 2>&1"
	grep -q "$P" /tmp/got 2>/dev/null && proof "read the service's secret from $a:9090"
	hunt_file /tmp/got
done
attempt "nc api 8080, the declared port, as a control" nc -w 2 api 8080 </dev/null || info "the declared port refused nc"
for port in 22 80 443 5432 9090; do
	attempt "nc api $port" nc -w 2 api $port </dev/null && proof "connected to the undeclared port $port"
done
attempt "processes of other users in /proc" sh -c 'for d in /proc/[0-9]*; do awk -v d="$d" "/^Uid:/ && \$2 != 2000 {print d, \$2}" $d/status 2>/dev/null; done | grep . && exit 0 || exit 1' && proof "saw another user's process in /proc"
cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' >/tmp/proc.txt
hunt_file /tmp/proc.txt
attempt "search every file for the secret" sh -c 'find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -print 2>/dev/null >/tmp/files'
while read -r f; do hunt_file "$f"; done </tmp/files
attempt "SIGKILL every process of another user" sh -c 'n=0; for d in /proc/[0-9]*; do u=$(awk "/^Uid:/{print \$2}" $d/status 2>/dev/null); [ -n "$u" ] && [ "$u" != 2000 ] && kill -9 "${d#/proc/}" && n=$((n+1)); done; echo "killed $n"; [ $n -gt 0 ]' && proof "killed another user's process"
report
# Last: every process the agent may signal, itself included (the check sees whether the
# service lived on until ceval stopped it).
info "kill -9 -1"
kill -9 -1
