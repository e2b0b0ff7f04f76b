# lib.sh: what every audit agent starts with. An audit agent knows only what a real agent
# knows: the prompt ($HOME/.ceval/prompt.md), the starting workspace, and how harnesses grade.
set -u
cd /workspace || exit 1
PROMPT="$HOME/.ceval/prompt.md"

# prompt_words: every word of the prompt, one a line, as written and without punctuation.
prompt_words() {
	tr -s ' \t\r\n' '\n\n\n\n' < "$PROMPT" 2>/dev/null
	tr -c 'A-Za-z0-9_.\n-' '\n' < "$PROMPT" 2>/dev/null | sed -e 's/^[.-]*//' -e 's/[.-]*$//' | grep -v '^$'
}

# prompt_paths: the paths the prompt names (a word with a file extension or a slash), one a
# line: relative ones, and absolute ones inside the workspace made relative (/workspace/calc.py
# is calc.py: Harbor's /app/calc.py is imported as that; so is /app/calc.py when the image's
# WORKDIR /app started the workspace, see in_workdir); an absolute path below one of the
# task's sandbox.outputs (AUDIT_OUTPUTS, set by audit before this file) stays absolute, as the
# agent writes it there; any other absolute path, and any with .., is dropped: never outside
# what the agent may write.
prompt_paths() {
	tr -c 'A-Za-z0-9_./-' '\n' < "$PROMPT" 2>/dev/null | sed -e 's/[.]*$//' | while IFS= read -r p || [ -n "$p" ]; do
		case "$p" in
		/workspace/*) p=${p#/workspace/} ;;
		/*) in_outputs "$p" || p=$(in_workdir "$p") || continue ;;
		esac
		while :; do case "$p" in ./*) p=${p#./} ;; *) break ;; esac; done
		printf '%s\n' "$p"
	done | grep -E '^/?[A-Za-z0-9_][A-Za-z0-9_./-]*(\.[A-Za-z0-9]+|/[A-Za-z0-9_.-]+)$' |
		grep -v -e '\.\.' -e '//' | sort -u
}

# in_workdir PATH: the absolute PATH made relative to the image's WORKDIR whose tree started
# the workspace (sandbox.image_workdir: copy), which audit names in AUDIT_IMAGE_WORKDIR when
# the backend knows it (the local one), an empty one too; fails when PATH is not below it.
# Without the variable (no WORKDIR was copied, or lib.sh runs where no backend named it:
# by hand, or under an older ceval) it is guessed as an agent that looks would find it: the
# shortest directory above PATH that holds something, all of which the workspace holds too
# (/app when the image's /app held data.txt); that finds nothing where the workspace did not
# start from the image's tree, and misses an empty WORKDIR, which looks like any empty
# directory: hence the variable.
in_workdir() {
	if [ -n "${AUDIT_IMAGE_WORKDIR:-}" ]; then
		case "$AUDIT_IMAGE_WORKDIR" in /) return 1 ;; esac
		case "$1" in "${AUDIT_IMAGE_WORKDIR%/}"/?*) printf '%s\n' "${1#"${AUDIT_IMAGE_WORKDIR%/}"/}"; return 0 ;; esac
		return 1
	fi
	d=
	r=${1#/}
	while case "$r" in */*) true ;; *) false ;; esac; do
		d=$d/${r%%/*}
		r=${r#*/}
		[ -d "$d" ] && [ ! -L "$d" ] || return 1
		n=0
		for e in "$d"/* "$d"/.[!.]* "$d"/..?*; do
			[ -e "$e" ] || [ -L "$e" ] || continue
			n=$((n + 1))
			[ -e "./${e##*/}" ] || [ -L "./${e##*/}" ] || { n=-1; break; }
		done
		[ "$n" -gt 0 ] && { printf '%s\n' "$r"; return 0; }
	done
	return 1
}

# in_outputs PATH: whether the absolute PATH lies below one of AUDIT_OUTPUTS.
in_outputs() {
	for o in ${AUDIT_OUTPUTS:-}; do
		case "$1" in "$o"/?*) return 0 ;; esac
	done
	return 1
}

# words_file FILE: write the prompt and every word of it to FILE.
words_file() {
	{ cat "$PROMPT"; echo; prompt_words; } > "$1" 2>/dev/null
}

# parent_of PATH: make PATH's directory.
parent_of() {
	case "$1" in */*) mkdir -p "${1%/*}" ;; esac
}

# test_files: the starting workspace's tests and test scripts, one a line.
test_files() {
	find . -path ./.git -prune -o -type f \( -name 'test_*.py' -o -name '*_test.py' -o -name 'tests.py' \
		-o -name 'conftest.py' -o -name '*_test.go' -o -name '*.test.js' -o -name '*.spec.js' \
		-o -name '*.test.ts' -o -name '*.spec.ts' -o -name 'test*.sh' -o -name '*_test.sh' -o -name 'check*.sh' \
		-o -path '*/test/*' -o -path '*/tests/*' -o -path '*/spec/*' \) -print | sed 's/^\.\///'
}

# script_files: every script of the starting workspace (tests included), one a line.
script_files() {
	{
		test_files
		find . -path ./.git -prune -o -type f \( -name '*.sh' -o -name '*.py' -o -name '*.bash' -o -name 'Makefile' -o -perm -100 \) -print | sed 's/^\.\///'
	} | sort -u
}
