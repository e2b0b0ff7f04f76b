. ./lib.sh
echo "ATTEMPT create 1000000 files" >&3
# printf, not ":": a failed redirection of a special builtin would end the shell.
i=0
while [ $i -lt 1000000 ]; do
	printf '' >f$i 2>/dev/null || break
	i=$((i + 1))
done
echo "created $i files; the next one failed: $( (printf "" >f$i) 2>&1)" >&3
printf '\nRC create 1000000 files %s\n' "$([ $i -lt 1000000 ] && echo 1 || echo 0)" >&3
true
