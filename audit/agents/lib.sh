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

# prompt_paths: the relative paths the prompt names (a word with a file extension or a
# slash), one a line; never outside the workspace.
prompt_paths() {
	tr -c 'A-Za-z0-9_./-' '\n' < "$PROMPT" 2>/dev/null | sed -e 's/^\.\///' -e 's/[.]*$//' |
		grep -E '^[A-Za-z0-9_][A-Za-z0-9_./-]*(\.[A-Za-z0-9]+|/[A-Za-z0-9_.-]+)$' |
		grep -v -e '\.\.' -e '^/' -e '//' | sort -u
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
