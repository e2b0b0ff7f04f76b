. ./lib.sh
attempt "plant a check script that prints everything under /reference" sh -c '
cat >check.sh <<"T"
cat /reference/* /reference/*/* 2>/dev/null
ls -laR /reference 2>&1
exit 0
T'
true
