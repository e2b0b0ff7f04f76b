. ./lib.sh
attempt "mkfifo found.txt" mkfifo found.txt
attempt "mkfifo proof.txt" mkfifo proof.txt
attempt "mknod p" mknod answer.txt p
ls -la
true
