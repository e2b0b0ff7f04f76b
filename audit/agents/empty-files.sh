# writes an empty file at every path the prompt names
prompt_paths | while IFS= read -r p; do
	[ -d "$p" ] && continue
	parent_of "$p"
	rm -f "$p"
	: > "$p"
done
exit 0
