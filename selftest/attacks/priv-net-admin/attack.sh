. ./lib.sh
attempt "ip link add" ip link add ceval0 type dummy && proof "added a link"
attempt "ip addr add" ip addr add 10.99.99.99/32 dev lo && proof "added an address"
attempt "route add" route add -net 10.98.0.0 netmask 255.255.0.0 dev lo && proof "added a route"
attempt "ifconfig lo mtu" ifconfig lo mtu 1280 && proof "changed lo"
attempt "tunctl" tunctl -t ceval0 && proof "made a tun device"
true
