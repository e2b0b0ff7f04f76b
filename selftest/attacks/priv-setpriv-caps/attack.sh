. ./lib.sh
attempt "setpriv --dump" setpriv -d
attempt "setpriv inheritable+ambient CAP_SYS_ADMIN" setpriv --inh-caps +sys_admin --ambient-caps +sys_admin grep CapEff /proc/self/status >/tmp/caps
attempt "setpriv inheritable CAP_DAC_READ_SEARCH,CAP_SYS_PTRACE" setpriv --inh-caps +dac_read_search,+sys_ptrace grep CapEff /proc/self/status >>/tmp/caps
cat /tmp/caps
grep -q 'CapEff:.*[1-9a-f]' /tmp/caps && proof "capabilities gained: $(cat /tmp/caps)"
true
