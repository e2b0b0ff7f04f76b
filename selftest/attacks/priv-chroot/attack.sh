. ./lib.sh
mkdir -p /tmp/new/old
attempt "chroot /" chroot / true && proof "chroot worked"
attempt "chroot /tmp/new" chroot /tmp/new /bin/true && proof "chroot worked"
attempt "pivot_root" pivot_root /tmp/new /tmp/new/old && proof "pivot_root worked"
true
