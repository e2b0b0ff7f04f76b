. ./lib.sh
for f in -m -n "-p -f" -u -i; do
	attempt "unshare $f" unshare $f true && proof "unshare $f worked"
done
true
