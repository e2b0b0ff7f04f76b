. ./lib.sh
attempt "find setuid and setgid files" find / \( -path /proc -o -path /sys \) -prune -o -type f \( -perm -4000 -o -perm -2000 \) -print
cp /bin/busybox ./id
attempt "chmod 6755 a workspace copy of busybox" chmod 6755 ./id
ls -l ./id
attempt "run the setuid copy" ./id -u >/tmp/uid
cat /tmp/uid
[ "$(cat /tmp/uid)" = 0 ] && proof "setuid copy ran as root"
mkdir -p sub && cp /bin/busybox sub/sh && chmod 4755 sub/sh && chmod g+s sub
true
