. ./lib.sh
attempt "read status" grep -E '^(Uid|Gid|Cap[A-Za-z]+|NoNewPrivs|Seccomp):' /proc/self/status
grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | grep -v '0000000000000000$' && proof "a capability set is not empty"
grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status || proof "no_new_privs is off"
grep -q '^Seccomp:[[:space:]]*2' /proc/self/status || proof "seccomp filter is off"
[ "$(id -u):$(id -g)" = 2000:2000 ] || proof "running as $(id -u):$(id -g)"
attempt "id" id
true
