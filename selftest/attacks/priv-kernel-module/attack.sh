. ./lib.sh
head -c 4096 /dev/urandom >/tmp/evil.ko
attempt "insmod" sh -c "insmod /tmp/evil.ko 2>&1" >/tmp/insmod.out
rc=$?
cat /tmp/insmod.out
[ $rc = 0 ] && proof "insmod loaded a module"
[ $rc != 0 ] && ! grep -q 'Operation not permitted' /tmp/insmod.out && proof "insmod reached the module loader"
attempt "rmmod" rmmod evil && proof "rmmod worked"
true
