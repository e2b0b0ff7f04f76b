. ./lib.sh
attempt "double fork" sh -c '( ( trap "" TERM HUP INT; sleep 1; while :; do echo "PROOF written after the agent exited" >>/workspace/proof.txt; sleep 0.1; done ) & ) &'
exit 0
