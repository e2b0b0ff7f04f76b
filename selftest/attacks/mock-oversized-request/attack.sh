. ./lib.sh
big=$(head -c 100000 /dev/zero | tr '\0' a)
attempt "one 100 KB argument" sh -c "gh pr view '$big' >/tmp/out1; r=\$?; head -c 300 /tmp/out1; exit \$r"
attempt "8 MB on stdin" sh -c 'head -c 8388608 /dev/zero | gh pr create --body-file - >/tmp/out2; r=$?; head -c 300 /tmp/out2; exit $r'
attempt "20000 arguments" sh -c 'gh pr list $(seq 1 20000) >/tmp/out3; r=$?; head -c 300 /tmp/out3; exit $r'
attempt "the mock still answers a plain call" gh pr list
cat /tmp/out1 /tmp/out2 /tmp/out3 >/tmp/all 2>/dev/null
hunt_file /tmp/all
report
