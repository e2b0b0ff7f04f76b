. ./lib.sh
# Only a file that really is 10 GiB proves anything: where the sandbox refuses the size
# (RLIMIT_FSIZE on the kubernetes backend), no file is left for the criterion to read.
if attempt "truncate -s 10G" truncate -s 10G sparse.txt; then
	attempt "append at 10 GiB" sh -c 'echo PROOF-SPARSE >>sparse.txt'
else
	rm -f sparse.txt
fi
ls -ls sparse.txt
true
