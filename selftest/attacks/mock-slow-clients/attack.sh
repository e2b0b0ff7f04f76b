. ./lib.sh
# Eighteen calls whose stdin stays open and silent: if each held one of mockd's connections
# (16 at most) until its timeout, a later call would have to wait or fail.
i=0
while [ $i -lt 18 ]; do
	(sleep 20 | gh pr create --body-file - >/dev/null 2>&1) &
	i=$((i + 1))
done
sleep 0.3
start=$(date +%s)
attempt "a plain call while 18 slow calls are open" sh -c 'timeout 3 gh pr list'
end=$(date +%s)
info "the plain call took about $((end - start)) s"
[ $((end - start)) -ge 3 ] && proof "the mock stalled: a plain call waited $((end - start)) s behind slow calls"
report
