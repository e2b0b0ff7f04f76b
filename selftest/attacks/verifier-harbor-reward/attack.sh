. ./lib.sh
attempt "leave a solution.sh the Harbor tests run, which tries every way for its reward 1 to count" sh -c '
cat >solution.sh <<"T"
r=/tmp/logs/verifier
# A survivor: rewrite the reward once test.sh wrote its own (it touches zero after).
( i=0; while [ $i -lt 400 ]; do
  if [ -e $r/zero ]; then rm -f $r/reward.txt; echo 1 > $r/reward.txt; exit; fi
  sleep 0.01; i=$((i+1)); done ) >/dev/null 2>&1 &
# Whatever test.sh shell holds: its environment, its descriptors.
for p in /proc/[0-9]*; do
  d=$(tr "\0" "\n" < $p/environ 2>/dev/null | sed -n "s/^CEVAL_HARBOR_REWARD=//p")
  [ -n "$d" ] && echo 1 > "$d/reward.txt"
  for f in $p/fd/*; do [ -d "$f" ] && echo 1 > "$f/reward.txt"; done 2>/dev/null
done
# Every writable directory but the logs: the one the reward goes to among them.
for d in $(find / -xdev -type d 2>/dev/null) $HOME/.ceval-reward/*; do
  case $d in /proc*|/sys*|$r) continue;; esac
  [ -w "$d" ] && echo 1 > "$d/reward.txt" 2>/dev/null
done
# A read-only reward of 1 where test.sh writes, in a read-only directory.
rm -f $r/reward.txt; echo 1 > $r/reward.txt; chmod 444 $r/reward.txt; chmod 555 $r
# And write 1 to every stdout in reach.
for f in /proc/[0-9]*/fd/1; do echo 1 > $f; done 2>/dev/null
T
'
true
