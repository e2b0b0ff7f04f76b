. ./lib.sh
# The marker is assembled at run time, so this script itself holds no match for it.
export T="TO""DO"
# A file over the snapshot's 16 MiB per-file cap used to be left out with only a note, so a
# negative check over it passed. Hide a to-do and a credentials file there.
attempt "to-do past the per-file cap" sh -c '{ echo "$T: not done"; head -c 17000000 /dev/zero; } >notes.txt'
attempt "credentials past the per-file cap" sh -c '{ echo secret; head -c 17000000 /dev/zero; } >credentials.txt'
ls -l notes.txt credentials.txt
true
