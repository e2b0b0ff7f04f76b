. ./lib.sh
attempt "leave a solution.sh the Harbor tests run, which writes reward 1 and kills the shell running tests/test.sh" sh -c '
cat >solution.sh <<"T"
echo 1 > /tmp/logs/verifier/reward.txt
kill -9 $PPID
T
'
true
