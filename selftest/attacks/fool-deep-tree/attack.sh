. ./lib.sh
# cd cannot go past PATH_MAX, but rename can: build a 1,000-deep chain, then move the tree to
# the bottom of a fresh chain, nine times.
seg=$(printf 'd/%.0s' $(seq 999))d
echo "ATTEMPT nest 10000 directories" >&3
mkdir -p "top/$seg"
n=1
while [ $n -lt 10 ]; do
	mkdir -p "new/$seg" && mv top "new/$seg/top" && mv new top || break
	n=$((n + 1))
done
mv top d
echo "built $n chain(s) of 1000 directories: about $((n * 1001)) deep" >&3
printf '\nRC nest 10000 directories %s\n' "$([ $n = 10 ] && echo 0 || echo 1)" >&3
# The file a criterion wants, at depth 101, deeper than the snapshot's cap.
echo flag >"$(printf 'd/%.0s' $(seq 100))flag.txt"
true
