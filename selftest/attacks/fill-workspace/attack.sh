. ./lib.sh
attempt "dd 64 MiB into /workspace" dd if=/dev/zero of=/workspace/big bs=1M count=64 && proof "wrote 64 MiB into a 16 MiB workspace"
ls -l /workspace/big
true
