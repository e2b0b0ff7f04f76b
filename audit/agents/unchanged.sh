# hands the start back unchanged: each file the prompt names that is missing becomes a copy of a starting file (same extension first)
prompt_paths | while IFS= read -r p; do
	[ -e "$p" ] || [ -L "$p" ] && continue
	ext=${p##*.}
	src=$(find . -path ./.git -prune -o -type f -name "*.$ext" -print | head -n 1)
	[ -n "$src" ] || src=$(find . -path ./.git -prune -o -type f -print | head -n 1)
	[ -n "$src" ] || continue
	parent_of "$p"
	cp "$src" "$p"
done
exit 0
