. ./lib.sh
attempt "dd with a 256 MiB buffer" dd if=/dev/zero of=/dev/null bs=256M count=1 && proof "allocated 256 MiB"
# Through a pipe: GNU tail seeks on /dev/zero and would buffer nothing.
attempt "tail buffering 300 MB" sh -c 'head -c 300000000 /dev/zero | tail -c 300000000 >/dev/null' && proof "buffered 300 MB"
true
