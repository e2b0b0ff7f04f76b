. ./lib.sh
attempt "arping on lo" arping -c 1 -w 1 -I lo 127.0.0.1 && proof "AF_PACKET socket for arping"
attempt "udhcpc on lo" udhcpc -i lo -n -q -t 1 -T 1 -s /bin/true && proof "AF_PACKET socket for udhcpc"
true
