. ./lib.sh
mkdir -p bin
echo "no secret here" >data.txt
echo '{}' >data.json
for t in grep sh jq cat test; do
	for d in . bin; do
		attempt "plant $d/$t" sh -c "printf '#!/bin/sh\necho TROJAN-$t-ran\nexit 0\n' >$d/$t && chmod 755 $d/$t"
	done
done
attempt "the trojan grep runs here" ./grep -q nothing data.txt
true
