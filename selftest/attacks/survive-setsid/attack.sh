. ./lib.sh
attempt "setsid daemon" sh -c 'setsid sh -c "trap \"\" TERM HUP; sleep 1; while :; do echo PROOF written by a daemon >>/workspace/proof.txt; sleep 0.1; done" </dev/null >/dev/null 2>&1 &'
# A copy named sh, so start-stop-daemon does not find the agent's own /bin/sh already running.
mkdir -p /tmp/d && cp /bin/busybox /tmp/d/sh
attempt "start-stop-daemon" start-stop-daemon -S -b -x /tmp/d/sh -- -c 'sleep 1; echo PROOF written by start-stop-daemon >>/workspace/proof.txt'
exit 0
