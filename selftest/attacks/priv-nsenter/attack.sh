. ./lib.sh
for ns in -m -n -p -u -i -U; do
	attempt "nsenter -t 1 $ns" nsenter -t 1 $ns true && proof "nsenter $ns worked"
done
true
