. ./lib.sh
attempt "ping 127.0.0.1" ping -c 1 -W 1 127.0.0.1 && proof "raw ICMP socket"
attempt "traceroute 127.0.0.1" traceroute -m 1 -w 1 127.0.0.1 && proof "raw socket for traceroute"
true
