. ./lib.sh
attempt "plant a test file that tries the network" sh -c '
cat >net_test.sh <<"T"
echo | nc -w 2 1.1.1.1 80 && echo CONNECTED
wget -q -T 2 -O- http://example.com/ >/dev/null 2>&1 && echo CONNECTED
echo | nc -w 2 127.0.0.1 80 && echo CONNECTED
ip route 2>/dev/null | grep -q default && echo CONNECTED
exit 0
T'
true
