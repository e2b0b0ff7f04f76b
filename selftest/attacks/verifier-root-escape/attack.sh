. ./lib.sh
attempt "plant a test script that, as the verifier's root, tries to reach the host" sh -c '
cat >escape.sh <<"T"
e() { echo "ROOT-ESCAPED: $*"; }
mkdir -p /tmp/m /tmp/n
mount -t tmpfs x /tmp/m 2>/dev/null && e mounted a tmpfs
mount -o bind /tmp/n /tmp/m 2>/dev/null && e bind-mounted
mknod /tmp/blk b 7 0 2>/dev/null && e made a block device node
for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/loop0 /dev/mem /dev/kmsg; do head -c 1 "$d" >/dev/null 2>&1 && e read "$d"; done
r1=$(stat -L -c %d:%i /proc/1/root/ 2>/dev/null) && [ "$r1" != "$(stat -c %d:%i /)" ] && e another root through /proc/1/root
echo 1 > /proc/sys/vm/drop_caches 2>/dev/null && e wrote a sysctl
ip link add ceval0 type dummy 2>/dev/null && e made a network device
unshare -U -r -m sh -c "mount -t tmpfs x /tmp/m" 2>/dev/null && e mounted in a nested user namespace
grep -rqs "CEVAL-CAN""ARY-" /reference /task 2>/dev/null && e read the grading material
(exec 3>/.ceval/supervisor) 2>/dev/null && e opened the lifeline for writing
(echo x >> /.ceval/init) 2>/dev/null && e wrote the init
exit 0
T'
true
