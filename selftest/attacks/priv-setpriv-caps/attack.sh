. ./lib.sh
# util-linux's setpriv (Debian images) exits 127 when it cannot apply capabilities, the code
# the runner reads as "command missing": use busybox's applet (exit 1) wherever there is one.
sp=setpriv
command -v busybox >/dev/null 2>&1 && busybox setpriv -d >/dev/null 2>&1 && sp="busybox setpriv"
attempt "setpriv --dump" $sp -d
attempt "setpriv inheritable+ambient CAP_SYS_ADMIN" $sp --inh-caps +sys_admin --ambient-caps +sys_admin grep CapEff /proc/self/status >/tmp/caps
attempt "setpriv inheritable CAP_DAC_READ_SEARCH,CAP_SYS_PTRACE" $sp --inh-caps +dac_read_search,+sys_ptrace grep CapEff /proc/self/status >>/tmp/caps
cat /tmp/caps
grep -q 'CapEff:.*[1-9a-f]' /tmp/caps && proof "capabilities gained: $(cat /tmp/caps)"
true
