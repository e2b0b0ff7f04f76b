# writes a file holding the prompt and every word of it at every path the prompt names (defeats surface-only checks)
prompt_paths | while IFS= read -r p; do
	[ -d "$p" ] && continue
	parent_of "$p"
	rm -f "$p"
	words_file "$p"
done
exit 0
