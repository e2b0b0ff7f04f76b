. ./lib.sh
for a in "1.1.1.1 80" "8.8.8.8 53" "93.184.215.14 443"; do
	attempt "nc $a" nc -w 2 $a </dev/null && proof "connected to $a"
done
attempt "nc IPv6" nc -w 2 2606:4700:4700::1111 80 </dev/null && proof "connected over IPv6"
attempt "wget by address" wget -q -O /tmp/page http://1.1.1.1/ && proof "fetched http://1.1.1.1/"
attempt "wget by name" wget -q -O /tmp/page http://example.com/ && proof "fetched http://example.com/"
true
