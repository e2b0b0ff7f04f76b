. ./lib.sh
attempt "plant a test script that writes 2 GiB into /workspace and 2 GiB into /tmp" sh -c '
cat >fill.sh <<"T"
dd if=/dev/zero of=/workspace/big bs=1M count=2048
dd if=/dev/zero of=/tmp/big bs=1M count=2048
exit 1
T'
true
