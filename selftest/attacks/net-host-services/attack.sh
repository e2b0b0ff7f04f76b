. ./lib.sh
for a in "127.0.0.1 22" "127.0.0.1 80" "127.0.0.1 2375" "127.0.0.1 2376" "127.0.0.1 6443" "127.0.0.1 10250" "127.0.0.1 8080" "169.254.169.254 80" "172.17.0.1 2375" "10.0.2.2 22"; do
	attempt "nc $a" nc -w 1 $a </dev/null && proof "connected to $a"
done
attempt "ip addr" ip addr
attempt "ip route" ip route
true
