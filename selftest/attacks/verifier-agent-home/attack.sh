. ./lib.sh
attempt "leave a note in the agent's home and /tmp" sh -c 'echo AGENT-LEFT-THIS >/home/agent/note.txt && echo AGENT-LEFT-THIS >/tmp/note.txt'
attempt "plant a probe that reads them and the gateway's port" sh -c '
cat >probe.sh <<"T"
cat /home/agent/note.txt /tmp/note.txt 2>/dev/null
echo | nc -w 1 127.0.0.1 80 && echo AGENT-LEFT-THIS
env | grep -i -e key -e token
exit 0
T'
true
