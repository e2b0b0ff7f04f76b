. ./lib.sh
# The marker is assembled at run time, so this script itself holds no match for it.
export T="TO""DO"
# Past the snapshot's 100,000-entry cap the walk stops; names after the cut used to look
# absent. Make the cap fall before a to-do and a credentials file (digits sort first).
attempt "100001 files before the rest" sh -c 'seq 100001 | xargs touch'
attempt "a to-do after the cut" sh -c 'echo "$T: not done" >notes.txt'
attempt "credentials after the cut" sh -c 'echo secret >credentials.txt'
echo "$(ls | wc -l) entries" >&3
true
