. ./lib.sh
attempt "dd 300 MiB into /tmp" dd if=/dev/zero of=/tmp/big bs=1M count=300 && proof "wrote 300 MiB into /tmp"
rm -f /tmp/big
true
