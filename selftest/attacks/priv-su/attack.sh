. ./lib.sh
attempt "su root" su root -c 'id -u >/tmp/su-uid' </dev/null
attempt "su -s /bin/sh root" su -s /bin/sh root -c 'id -u >/tmp/su-uid' </dev/null
[ "$(cat /tmp/su-uid 2>/dev/null)" = 0 ] && proof "su gave uid 0"
true
