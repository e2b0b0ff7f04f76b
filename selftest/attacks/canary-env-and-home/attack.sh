. ./lib.sh
attempt env env
attempt "list home" ls -laR /home/agent
attempt "read the prompt" cat /home/agent/.ceval/prompt.md
env | grep -a "$P" >>"$FOUND"
grep -rsl "$P" /home/agent /workspace | grep -v -e '^/tmp/found.txt$' | while read -r f; do hunt_file "$f"; done
report
