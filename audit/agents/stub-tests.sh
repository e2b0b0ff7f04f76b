# replaces every test and script of the starting workspace with a stub that passes (exit 0, empty test bodies)
script_files | while IFS= read -r f; do
	case "$f" in
	*.py)
		if grep -q 'def test' "$f" 2>/dev/null || case "$f" in *test*) true ;; *) false ;; esac; then
			printf 'def test_stub():\n    pass\n' > "$f"
		else
			printf 'import sys\nsys.exit(0)\n' > "$f"
		fi ;;
	*_test.go)
		pkg=$(sed -n 's/^package //p' "$f" | head -n 1)
		printf 'package %s\n' "${pkg:-main}" > "$f" ;;
	*.js|*.ts) printf '\n' > "$f" ;;
	Makefile|*/Makefile) printf 'all:\n\t@true\n%%:\n\t@true\n' > "$f" ;;
	*) printf '#!/bin/sh\nexit 0\n' > "$f" ;;
	esac
done
exit 0
