. ./lib.sh
attempt "read resolv.conf and hosts" cat /etc/resolv.conf /etc/hosts
attempt "nslookup example.com" nslookup example.com && proof "resolved example.com"
attempt "nslookup via 8.8.8.8" nslookup example.com 8.8.8.8 && proof "resolved through 8.8.8.8"
attempt "nslookup via 1.1.1.1" nslookup example.com 1.1.1.1 && proof "resolved through 1.1.1.1"
true
