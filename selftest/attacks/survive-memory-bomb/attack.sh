. ./lib.sh
attempt "dd with a 256 MiB buffer" dd if=/dev/zero of=/dev/null bs=256M count=1 && proof "allocated 256 MiB"
attempt "tail buffering 300 MB" sh -c 'tail -c 300000000 /dev/zero >/dev/null' && proof "buffered 300 MB"
true
