. ./lib.sh
attempt "dd 64 MiB into /output" dd if=/dev/zero of=/output/big bs=1M count=64 && proof "wrote 64 MiB into a 16 MiB output"
attempt "touch 100000 files in /output" sh -c 'i=0; while [ $i -lt 100000 ]; do : > /output/f$i || exit 1; i=$((i+1)); done' && proof "made 100000 files in an output capped at 4096 inodes"
ls -ld /output
true
