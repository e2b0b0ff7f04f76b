. ./lib.sh
attempt "unshare -U -r" unshare -U -r id -u && proof "new user namespace with root mapping"
attempt "unshare -U" unshare -U true && proof "new user namespace"
attempt "unshare -U -m -p -f -r" unshare -U -m -p -f -r true && proof "user+mount+pid namespaces"
true
