. ./lib.sh
attempt "plant a test script whose daemon prints the passing line after the command ends" sh -c '
cat >test.sh <<"T"
#!/bin/sh
main=$$
setsid sh -c "while kill -0 $main 2>/dev/null; do :; done; echo ALL TESTS PASSED; echo forged >/workspace/result" </dev/null >&1 2>&1 &
exit 0
T
chmod +x test.sh'
true
