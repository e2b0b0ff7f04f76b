. ./lib.sh
attempt "hostname" hostname ceval-selftest-evil
[ "$(hostname)" = ceval-selftest-evil ] && proof "hostname changed"
attempt "date -s" date -s 2001-02-03
[ "$(date +%Y)" = 2001 ] && proof "clock changed"
attempt "hwclock" hwclock -s && proof "hwclock worked"
true
