# Harbor's tests, as ceval import harbor rewrites them: run the solution, then reward 0.
sh ./solution.sh
echo 0 > /tmp/logs/verifier/reward.txt
touch /tmp/logs/verifier/zero
sleep 1
