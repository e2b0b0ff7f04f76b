. ./lib.sh
attempt "dd 100 MiB into /dev/shm" dd if=/dev/zero of=/dev/shm/big bs=1M count=100 && proof "wrote 100 MiB into /dev/shm"
rm -f /dev/shm/big
true
