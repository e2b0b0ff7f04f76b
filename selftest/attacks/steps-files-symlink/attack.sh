. ./lib.sh
T="{{TASK_DIR}}"
if [ "$CEVAL_STEP" = 1 ]; then
attempt "link given.txt, where step 2's file goes, to the host's reference/canary.txt" ln -s "$T/reference/canary.txt" given.txt
attempt "relative link rel.txt, where step 2's file goes, to the same" ln -s "../../../../../../../../..$T/reference/canary.txt" rel.txt
attempt "link sub, where step 2's directory goes, to the host's reference directory" ln -s "$T/reference" sub
attempt "link proc.txt, where step 2's file goes, through /proc/1/root" ln -s "/proc/1/root$T/reference/canary.txt" proc.txt
else
attempt "read what step 2's copy left where the links were" sh -c 'ls -la . sub; cat given.txt rel.txt proc.txt sub/x.txt > found.txt'
fi
true
