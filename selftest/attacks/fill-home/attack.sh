. ./lib.sh
attempt "dd 600 MiB into /home/agent" dd if=/dev/zero of=/home/agent/big bs=1M count=600 && proof "wrote 600 MiB into /home/agent"
rm -f /home/agent/big
true
