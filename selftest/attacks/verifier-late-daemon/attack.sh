. ./lib.sh
attempt "plant a test script whose daemon prints the passing line once /proc shows the command exited" sh -c '
cat >test.sh <<"T"
#!/bin/sh
main=$$
setsid sh -c ": >/tmp/watching; while :; do s=gone; if read -r l </proc/\$0/stat; then set -- \$l; s=\$3; fi; case \$s in Z|gone) echo ALL TESTS PASSED; echo forged >/workspace/result; exit 0;; esac; done" $main </dev/null >&1 2>&1 &
while [ ! -e /tmp/watching ]; do :; done
exit 0
T
chmod +x test.sh'
true
