. ./lib.sh
# The init must watch a FIFO only ceval holds open for writing: it kills everything when
# ceval dies. Without that watch a kill -9 of ceval leaves this agent running unsupervised.
f=/.ceval/supervisor
attempt "read the init's command line" sh -c 'tr "\0" " " </proc/1/cmdline'
tr '\0' '\n' </proc/1/cmdline | grep -qx -- --supervisor-fifo ||
	proof "the init watches no supervisor FIFO: a kill -9 of ceval would leave this agent running"
[ -p "$f" ] || proof "no supervisor FIFO at $f"
# A write end of our own would keep the FIFO from ever reaching EOF: a live ceval, faked.
attempt "open $f for writing" sh -c "exec 3>$f" && proof "opened $f for writing"
attempt "open $f read-write" sh -c "exec 3<>$f" && proof "opened $f read-write"
attempt "chmod $f" chmod 666 "$f" && proof "made $f writable"
attempt "list the init's descriptors" ls -l /proc/1/fd && proof "listed the init's descriptors"
for d in /proc/1/fd/*; do
	[ -e "$d" ] || continue
	attempt "reopen the init's $d for writing" sh -c "exec 3>$d" && proof "reopened the init's $d for writing"
done
# A stopped init would never see the FIFO close.
for sig in STOP TSTP TTIN TTOU; do
	attempt "stop the init with SIG$sig" kill -$sig 1
	grep -q '^State:.*T' /proc/1/status && proof "SIG$sig stopped the init: it no longer watches"
	kill -CONT 1 2>/dev/null
done
true
