. ./lib.sh
attempt "truncate -s 10G" truncate -s 10G sparse.txt
attempt "append at 10 GiB" sh -c 'echo PROOF-SPARSE >>sparse.txt'
ls -ls sparse.txt
true
