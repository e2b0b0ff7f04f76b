. ./lib.sh
# The marker is assembled at run time, so this script itself holds no match for it.
export T="TO""DO"
# 100,000 empty files with 255-byte names under 63 directories with 255-byte names: ~16 KiB
# a path, ~1.6 GB of paths and no bytes. It once took ceval 12.7 GB and 246 s to snapshot
# and grade. Renames at the top keep every path this script uses short. A to-do and a
# credentials file sort after all of it.
attempt "100000 files with 255-byte names" sh -c 'mkdir cur && cd cur && seq 100000 | xargs printf "f%0254d\n" | xargs touch && echo "$T: not done" >zz-notes.txt'
i=2
while [ $i -le 63 ]; do
	mkdir next && mv cur "next/$(printf 'd%0254d' $i)" && mv next cur || break
	i=$((i + 1))
done
attempt "nest them 64 deep" test $i = 64
attempt "credentials after the tree" sh -c 'mv cur tree && echo secret >zz-credentials.txt'
true
