. ./lib.sh
mkdir -p /tmp/m
attempt "mount tmpfs" mount -t tmpfs none /tmp/m && proof "mounted a tmpfs"
attempt "bind-mount /" mount -o bind / /tmp/m && proof "bind-mounted /"
attempt "mount proc" mount -t proc proc /tmp/m && proof "mounted procfs"
attempt "remount / rw" mount -o remount,rw / && proof "remounted / read-write"
dev=$(awk '$5 == "/.ceval/init" { for (i = 7; i <= NF; i++) if ($i == "-") print $(i + 2) }' /proc/self/mountinfo)
attempt "mount the host disk ${dev:-/dev/vda}" mount "${dev:-/dev/vda}" /tmp/m && proof "mounted the host disk"
attempt "umount /workspace" umount /workspace && proof "unmounted the workspace"
true
