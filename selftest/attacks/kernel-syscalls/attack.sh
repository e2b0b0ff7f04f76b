. ./lib.sh
# ceval-probe logs each system call itself (ATTEMPT, the error, RC with the errno) on this
# script's stdout and, on any success, writes proof.txt as lib.sh's proof does. A missing
# probe exits 127, which the selftest reports as an error.
attempt "kernel syscall probe" /usr/local/bin/ceval-probe
true
