package shell

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// fixture is the workspace every conformance row starts from.
var fixture = map[string]string{
	"data.txt":     "apple 3\nbanana 12\ncherry 7\napple 5\ndate 1\n",
	"words.txt":    "foo\nbar\nbaz\nfoo bar\nFOO\n",
	"nums.txt":     "10\n9\n100\n-3\n2.5\n",
	"people.csv":   "name,age,city\nalice,30,paris\nbob,25,berlin\ncarol,35,paris\n",
	"obj.json":     `{"name":"x","items":[1,2,3],"nested":{"a":true,"b":null},"tags":["p","q"]}` + "\n",
	"lines.jsonl":  "{\"id\":1,\"ok\":true}\n{\"id\":2,\"ok\":false}\n",
	"a.txt":        "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
	"b.txt":        "one\n2\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n",
	"nonl.txt":     "no newline",
	"src/a.go":     "package a\n\nfunc A() {}\n",
	"src/b.go":     "package b\n// TODO fix this\nfunc B() {}\n",
	"src/sub/c.md": "# Title\nhello world\n",
	"tabs.tsv":     "k1\tv1\tx\nk2\tv2\ty\n",
	"dup.txt":      "a\na\nb\nc\nc\nc\na\n",
	"script.sh":    "echo sourced $1\nSOURCED=yes\n",
}

type confCase struct {
	name   string
	script string
	// skip says why this row's behaviour is documented as different from bash.
	skip string
}

var conformance = []confCase{
	// shell grammar
	{name: "echo", script: `echo hello world`},
	{name: "echo -n and -e", script: `echo -n a; echo -e 'b\tc\nd'`},
	{name: "semicolons and status", script: `true; false; echo $?`},
	{name: "and or", script: `true && echo yes; false && echo no; false || echo fallback; true || echo never`},
	{name: "and or chain status", script: `false && true; echo $?; false || false; echo $?`},
	{name: "exit code", script: `exit 3`},
	{name: "exit code of last command", script: `echo hi; false`},
	{name: "negation", script: `! false && echo negated; ! true; echo $?`},
	{name: "pipeline", script: `cat data.txt | grep apple | wc -l`},
	{name: "pipeline status is last", script: `false | true; echo $?; true | false; echo $?`},
	{name: "pipefail", script: `set -o pipefail; false | true; echo $?`},
	{name: "long pipeline", script: `seq 1 2000 | grep 7 | sort -rn | head -3`},
	{name: "pipeline head closes early", script: `seq 1 100000 | head -2; echo done`},
	{name: "pipeline stage is subshell", script: `x=1; echo 2 | read x; echo $x`},
	{name: "while read pipeline", script: `printf 'a 1\nb 2\n' | while read k v; do echo "$v=$k"; done`},
	{name: "pipe stderr with |&", script: `{ echo out; echo err >&2; } |& sort`},
	{name: "redirect out", script: `echo hi > /tmp/x.$$; cat /tmp/x.$$; echo again > /tmp/x.$$; cat /tmp/x.$$; rm /tmp/x.$$`},
	{name: "redirect append", script: `echo a > /tmp/y.$$; echo b >> /tmp/y.$$; cat /tmp/y.$$; rm /tmp/y.$$`},
	{name: "redirect in", script: `wc -l < data.txt`},
	{name: "redirect 2>&1", script: `{ echo out; echo err >&2; } 2>&1 | cat`},
	{name: "redirect 2>/dev/null", script: `{ echo out; echo err >&2; } 2>/dev/null`},
	{name: "redirect >/dev/null 2>&1", script: `cat nosuchfile >/dev/null 2>&1; echo $?`},
	{name: "redirect &>", script: `{ echo out; echo err >&2; } &> /tmp/z.$$; sort /tmp/z.$$; rm /tmp/z.$$`},
	{name: "redirect order matters", script: `{ echo err >&2; } 2>&1 >/dev/null | wc -l`},
	{name: "redirect to missing dir fails", script: `echo x > /nonexistent/dir/f; echo $?`},
	{name: "heredoc", script: "cat <<EOF\nline $((1+1))\n$(echo sub)\nEOF"},
	{name: "heredoc quoted", script: "cat <<'EOF'\nno $expansion `here`\nEOF"},
	{name: "heredoc dash strips tabs", script: "cat <<-EOF\n\tindented\n\t\tmore\n\tEOF"},
	{name: "heredoc into pipeline", script: "cat <<EOF | grep b | tr a-z A-Z\nabc\nxyz\nbcd\nEOF"},
	{name: "heredoc to while", script: "while read l; do echo \"<$l>\"; done <<EOF\none\ntwo\nEOF"},
	{name: "here-string", script: `x="a b c"; wc -w <<< "$x"; cat <<< hello`},
	{name: "command substitution", script: `n=$(wc -l < data.txt); echo "lines: $n"; echo "$(echo $(echo nested))"`},
	{name: "backquotes", script: "echo `echo old style`"},
	{name: "cmdsubst status", script: `x=$(false); echo $?; y=$(true); echo $?`},
	{name: "cmdsubst trims newlines", script: `x=$(printf 'a\n\n\n'); echo "[$x]"`},
	{name: "cmdsubst from file", script: `x=$(< words.txt); echo "$x" | head -1`},
	{name: "variables", script: `a=1 b="two words"; echo $a "$b" ${a}x; unset a; echo "[${a}]"`},
	{name: "parameter expansion", script: `f=dir/file.tar.gz; echo ${f##*/} ${f%%.*} ${f#*.} ${f%.*} ${#f} ${u:-def} ${f/file/FILE}`},
	{name: "default assignment", script: `echo ${v:=set}; echo $v`},
	{name: "arithmetic", script: `i=5; echo $((i * 2 + 1)) $((i / 2)) $((i % 3)) $((2 ** 10)); ((i++)); echo $i`},
	{name: "positional params", script: `set -- a b "c d"; echo $#; echo "$@"; shift; echo $1; for x in "$@"; do echo "<$x>"; done`},
	{name: "if elif else", script: `x=2; if [ $x -eq 1 ]; then echo one; elif [ $x -eq 2 ]; then echo two; else echo other; fi`},
	{name: "if with command", script: `if grep -q banana data.txt; then echo found; fi; if grep -q kiwi data.txt; then echo found; else echo missing; fi`},
	{name: "for loop", script: `for i in 1 2 3; do echo "i=$i"; done`},
	{name: "for glob", script: `for f in src/*.go; do echo $f; done`},
	{name: "for c-style", script: `for ((i=0; i<3; i++)); do echo $i; done`},
	{name: "while loop", script: `i=0; while [ $i -lt 3 ]; do echo $i; i=$((i+1)); done`},
	{name: "until loop", script: `i=0; until [ $i -ge 2 ]; do echo $i; i=$((i+1)); done`},
	{name: "break continue", script: `for i in 1 2 3 4 5; do [ $i = 2 ] && continue; [ $i = 4 ] && break; echo $i; done`},
	{name: "nested break 2", script: `for i in 1 2; do for j in a b; do [ $j = b ] && break 2; echo $i$j; done; done; echo end`},
	{name: "while read file", script: `while IFS=, read -r name age city; do echo "$name is $age"; done < people.csv`},
	{name: "case", script: `for w in apple Bob x12 other; do case $w in a*) echo "a: $w";; [A-Z]*) echo "cap: $w";; x[0-9]*|y) echo "x: $w";; *) echo "default: $w";; esac; done`},
	{name: "case fallthrough", script: `case a in a) echo one;& b) echo two;; c) echo three;; esac`},
	{name: "functions", script: `greet() { echo "hello $1"; return 3; }; greet world; echo $?`},
	{name: "function locals", script: `x=global; f() { local x=inner; echo $x; }; f; echo $x`},
	{name: "function recursion", script: `fact() { if [ $1 -le 1 ]; then echo 1; else echo $(( $1 * $(fact $(( $1 - 1 ))) )); fi; }; fact 6`},
	{name: "function keyword", script: `function f { echo kw; }; f`},
	{name: "subshell isolation", script: `x=1; (x=2; echo $x); echo $x; (exit 4); echo $?`},
	{name: "brace group redirect", script: `{ echo a; echo b; } | wc -l`},
	{name: "test strings", script: `[ abc = abc ] && echo eq; [ abc != abd ] && echo ne; [ -z "" ] && echo empty; [ -n x ] && echo nonempty`},
	{name: "test numbers", script: `[ 3 -lt 10 ] && echo lt; [ 10 -ge 10 ] && echo ge; test 5 -ne 6; echo $?`},
	{name: "test files", script: `[ -f data.txt ] && echo file; [ -d src ] && echo dir; [ -e nope ] || echo missing; [ -s data.txt ] && echo nonempty`},
	{name: "test logic", script: `[ 1 -eq 1 -a 2 -eq 3 ]; echo $?; [ 1 -eq 1 -o 2 -eq 3 ]; echo $?; [ ! -f nope ]; echo $?`},
	{name: "test bad integer", script: `[ abc -eq 1 ]; echo $?`},
	{name: "double bracket", script: `x=hello.txt; [[ $x == *.txt ]] && echo glob; [[ $x =~ ^h(el)lo ]] && echo "re ${BASH_REMATCH[1]}"; [[ -f data.txt && ! -d data.txt ]] && echo ok`},
	{name: "set -e stops", script: "set -e\necho before\nfalse\necho after"},
	{name: "set -e ignores conditions", script: "set -e\nif false; then :; fi\nfalse || true\nfalse && true\n! true\necho survived"},
	{name: "set -e in pipeline", script: "set -e\nfalse | true\necho ok\ntrue | false\necho not"},
	{name: "set -e in function", script: "set -e\nf() { false; echo inside; }\nf\necho after"},
	{name: "set -u", script: "set -u\necho start\necho $undefined_var\necho after"},
	{name: "unset parameter error", script: "echo ${zz?oops}; echo after"},
	{name: "wc widths", script: `wc -l < data.txt; wc -lw data.txt; cat data.txt | wc; wc -c data.txt - < words.txt`},
	{name: "export and env", script: `export FOO=bar; sh -c 'echo $FOO'`},
	{name: "prefix assignment", script: `X=1 sh -c 'echo $X'; echo "[$X]"`},
	{name: "sh -c args", script: `sh -c 'echo $0 $1 $2' name a b`},
	{name: "eval", script: `cmd='echo evaluated'; eval "$cmd"; eval 'x=5'; echo $x`},
	{name: "source", script: `. ./script.sh arg; echo $SOURCED`},
	{name: "read builtin", script: `echo "a b c d" | { read x y rest; echo "$x|$y|$rest"; }; read -r line < words.txt; echo $line`},
	{name: "cd and pwd", script: `cd src; ls; cd sub && cat c.md; cd ../..; ls src | wc -l`},
	{name: "unknown command", script: `nosuchcommand arg; echo $?`},
	{name: "arrays", script: `a=(x y z); echo ${a[1]} ${#a[@]}; a+=(w); echo "${a[@]}"`},
	{name: "brace expansion", script: `echo {a,b,c}.txt; echo {1..4}`},
	{name: "globs no match", script: `echo nomatch*.xyz`},
	{name: "quoting", script: `echo 'single $x' "double \$x" $'ansi\tc' "a\"b"`},
	{name: "exit in function exits shell", script: `f() { exit 7; }; f; echo never`},
	{name: "trap exit", script: `trap 'echo cleanup' EXIT; echo work`},
	{name: "stdin to commands in loop", script: `while read l; do echo "[$l]"; head -1; done < words.txt`},

	// commands
	{name: "cat -n", script: `cat -n words.txt`},
	{name: "cat multiple and stdin", script: `echo mid | cat a.txt - nonl.txt | tail -3`},
	{name: "cat missing file", script: `cat nosuch.txt; echo $?`},
	{name: "grep basic", script: `grep apple data.txt`},
	{name: "grep -E", script: `grep -E 'ap+le|cherry' data.txt`},
	{name: "grep -F", script: `grep -F 'a.' data.txt; echo $?`},
	{name: "grep -i", script: `grep -i foo words.txt`},
	{name: "grep -v", script: `grep -v foo words.txt`},
	{name: "grep -c", script: `grep -c foo words.txt`},
	{name: "grep -q status", script: `grep -q apple data.txt; echo $?; grep -q kiwi data.txt; echo $?; grep -q x nosuch; echo $?`},
	{name: "grep -n", script: `grep -n a words.txt`},
	{name: "grep -o", script: `grep -o '[0-9]\+' data.txt`},
	{name: "grep -x", script: `grep -x foo words.txt`},
	{name: "grep -w", script: `grep -w foo words.txt`},
	{name: "grep -l", script: `grep -l package src/a.go src/b.go src/sub/c.md`},
	{name: "grep -r", script: `grep -r TODO src`},
	{name: "grep -rn with include", script: `grep -rn --include='*.go' func src | sort`},
	{name: "grep -rl", script: `grep -rl package . | sort`},
	{name: "grep BRE groups", script: `grep 'ba\(na\)\{2\}' data.txt; grep 'apple\|date' data.txt`},
	{name: "grep BRE literal plus", script: `echo 'a+b' | grep 'a+b'; echo 'aab' | grep 'a\+b'`},
	{name: "grep -e multiple", script: `grep -e apple -e date data.txt`},
	{name: "grep multiple files", script: `grep o words.txt src/sub/c.md`},
	{name: "grep -h -c multi", script: `grep -c a data.txt words.txt; grep -h foo words.txt data.txt`},
	{name: "grep anchors and classes", script: `grep '^[[:upper:]]' words.txt; grep '[0-9]$' data.txt | wc -l`},
	{name: "grep -A -B", script: `grep -A1 banana data.txt; grep -B1 date data.txt`},
	{name: "egrep", script: `egrep 'a{2}|z$' words.txt data.txt`},
	{name: "wc", script: `wc data.txt; wc -l data.txt; wc -w < data.txt; wc -c nonl.txt`},
	{name: "wc multiple", script: `wc -l data.txt words.txt`},
	{name: "head tail", script: `head -n 2 a.txt; head -3 a.txt; tail -n 2 a.txt; tail -n +9 a.txt; tail -1 nonl.txt`},
	{name: "head -c tail -c", script: `head -c 5 a.txt; echo; tail -c 4 a.txt`},
	{name: "head -n negative", script: `head -n -8 a.txt`},
	{name: "sort", script: `sort words.txt; sort -r data.txt`},
	{name: "sort -n", script: `sort -n nums.txt; sort -nr nums.txt`},
	{name: "sort -u", script: `sort -u dup.txt`},
	{name: "sort -k", script: `sort -k2 -n data.txt; sort -t, -k3,3 -k2,2n people.csv`},
	{name: "sort -k reverse numeric", script: `sort -k2,2nr data.txt`},
	{name: "uniq", script: `uniq dup.txt; uniq -c dup.txt; sort dup.txt | uniq -d; sort dup.txt | uniq -u`},
	{name: "sort uniq count idiom", script: `cut -d' ' -f1 data.txt | sort | uniq -c | sort -rn | head -1`},
	{name: "cut", script: `cut -d, -f1,3 people.csv; cut -c1-3 words.txt; cut -f2 tabs.tsv; cut -d, -f2- people.csv`},
	{name: "tr", script: `echo hello | tr a-z A-Z; echo 'a  b   c' | tr -s ' '; echo hello | tr -d l; echo abc | tr -c 'a\n' x; echo 'x:y' | tr ':' '\n'`},
	{name: "tr classes", script: `echo 'Hello World 42' | tr '[:lower:]' '[:upper:]'; echo 'a1b2' | tr -d '[:digit:]'`},
	{name: "sed s", script: `sed 's/apple/APPLE/' data.txt; sed 's/a/A/g' words.txt`},
	{name: "sed -n p", script: `sed -n '2p' data.txt; sed -n '/cherry/,$p' data.txt; sed -n '$p' a.txt`},
	{name: "sed d", script: `sed '1d' data.txt; sed '/apple/d' data.txt`},
	{name: "sed -E groups", script: `sed -E 's/([a-z]+) ([0-9]+)/\2:\1/' data.txt`},
	{name: "sed BRE groups", script: `sed 's/\([a-z]*\) \([0-9]*\)/\2-\1/' data.txt; sed 's/a\{2\}/X/' <<< 'baab'`},
	{name: "sed multiple -e and ;", script: `sed -e 's/a/1/' -e 's/e/2/' data.txt; sed 's/a/1/;s/b/2/' words.txt`},
	{name: "sed & and delimiters", script: `sed 's|/|_|g; s/[0-9][0-9]*/<&>/' <<< 'a/b/c 12'`},
	{name: "sed ranges and nth", script: `sed '2,3d' a.txt; sed 's/o/0/2' <<< 'foo boo'`},
	{name: "sed a i c", script: "sed '2a\\\nadded' words.txt; sed '1i inserted' words.txt; sed '/baz/c changed' words.txt"},
	{name: "sed y and =", script: `sed 'y/abc/xyz/' words.txt; sed -n '/bar/=' words.txt`},
	{name: "sed q", script: `sed 3q a.txt; sed -n '/four/{p;q}' a.txt`},
	{name: "sed no trailing newline", script: `sed 's/no/yes/' nonl.txt; echo; sed -n p nonl.txt | wc -c`},
	{name: "sed -i on tmp", script: `cp_=$(cat data.txt); echo "$cp_" > /tmp/s.$$; sed -i 's/apple/pear/g' /tmp/s.$$; cat /tmp/s.$$; rm /tmp/s.$$`},
	{name: "sed hold space", script: `sed -n '1!G;h;$p' words.txt`},
	{name: "awk print fields", script: `awk '{print $1}' data.txt; awk '{print $2, $1}' data.txt`},
	{name: "awk -F and NR NF", script: `awk -F, 'NR>1 {print NR": "$1" has "NF" fields"}' people.csv`},
	{name: "awk BEGIN END sum", script: `awk 'BEGIN {s=0} {s+=$2} END {print "total", s, NR}' data.txt`},
	{name: "awk patterns", script: `awk '/apple/' data.txt; awk '$2 > 5' data.txt; awk '$1 == "date" {print $2}' data.txt`},
	{name: "awk printf", script: `awk '{printf "%-8s|%5.2f|%d\n", $1, $2, $2*2}' data.txt`},
	{name: "awk arrays", script: `awk '{c[$1]+=$2} END {n=0; for (k in c) n++; print n, c["apple"]}' data.txt`},
	{name: "awk string functions", script: `awk '{print length($1), toupper(substr($1,1,3)), index($1,"an")}' data.txt`},
	{name: "awk split sub gsub", script: `echo 'a:b:c' | awk '{n=split($0, p, ":"); print n, p[2]; gsub(/:/, "-"); print; sub(/a/, "A"); print}'`},
	{name: "awk -v and OFS", script: `awk -v x=10 'BEGIN{OFS="-"} {print $1, $2+x}' data.txt`},
	{name: "awk NF and $NF", script: `awk '{print NF, $NF}' words.txt`},
	{name: "awk range and next", script: `awk '/two/,/four/ {print; next} {c++} END {print c}' a.txt`},
	{name: "awk if else while", script: `awk '{if ($2 % 2) print $1, "odd"; else print $1, "even"}' data.txt; awk 'BEGIN{i=0; while (i<3) {printf "%d ", i; i++}; print ""}'`},
	{name: "awk match and regex ops", script: `awk '$1 ~ /^[ab]/ {print} $1 !~ /a/ {print "no a:", $1}' data.txt; echo 'foo123bar' | awk '{match($0, /[0-9]+/); print RSTART, RLENGTH}'`},
	{name: "awk functions", script: `awk 'function sq(x) { return x*x } {print sq($2)}' data.txt`},
	{name: "awk string vs number compare", script: `printf '10\n9\nabc\n' | awk '$1 > 5 {print "gt", $1}'; awk 'BEGIN{print (1 == 1.0), ("a" < "b"), (10 < 9)}'`},
	{name: "awk number output", script: `awk 'BEGIN{print 1/3, 100000, 2^30, 0.1+0.2, 1e6, int(3.9), -7/2}'`},
	{name: "awk large integers", script: `awk 'BEGIN{print 2^31}'`, skip: "integral values below 1e16 print as integers (gawk's and POSIX's rule); mawk prints 2.14748e+09"},
	{name: "awk exit code", script: `awk 'NR==2 {exit 3}' data.txt; echo $?`},
	{name: "awk modify field", script: `awk '{$2 = $2 * 10; print}' data.txt; awk -F, -v OFS=';' '{$1=$1; print}' people.csv`},
	{name: "awk uninitialized and concat", script: `awk 'BEGIN{print x+0, "[" x "]", 1 " " 2}'`},
	{name: "awk getline var", script: `awk 'NR==1 {getline line; print "next is", line}' data.txt`},
	{name: "diff same", script: `diff a.txt a.txt; echo $?`},
	{name: "diff normal", script: `diff a.txt b.txt; echo $?`},
	{name: "diff -u", script: `diff -u a.txt b.txt | tail -n +3; echo ${PIPESTATUS[0]}`},
	{name: "diff -u headers", script: `diff -u a.txt b.txt | head -2 | cut -c1-9`},
	{name: "diff -q", script: `diff -q a.txt b.txt; echo $?`},
	{name: "diff missing file", script: `diff a.txt nosuch >/dev/null 2>&1; echo $?`},
	{name: "diff no newline", script: `printf 'no newline\n' > /tmp/d.$$; diff nonl.txt /tmp/d.$$; echo $?; rm /tmp/d.$$`},
	{name: "diff stdin", script: `sed 's/two/TWO/' a.txt | diff a.txt -`},
	{name: "cmp", script: `cmp a.txt a.txt; echo $?; cmp a.txt b.txt; echo $?; cmp -s a.txt b.txt; echo $?`},
	{name: "find", script: `find src | sort; find . -name '*.go' | sort; find src -type d | sort`},
	{name: "find expressions", script: `find . -name '*.txt' -not -name 'a*' | sort; find src -type f -name '*.md' -o -name 'a.go' | sort`},
	{name: "find maxdepth", script: `find . -maxdepth 1 -type d | sort; find src -mindepth 2 | sort`},
	{name: "find -exec", script: `find src -name '*.go' -exec grep -l TODO {} \;; find src -name '*.go' -exec wc -l {} + | sort`},
	{name: "find -path", script: `find . -path '*sub*' | sort`},
	{name: "ls", script: `ls; ls src; ls -a src/sub; ls -d src; ls nosuch; echo $?`},
	{name: "ls -1 -R", script: `ls -1 src; ls -R src`},
	{name: "printf", script: `printf '%s=%d\n' a 1 b 2; printf '%5s|%-5s|%05.1f\n' x y 3.14159; printf 'no newline'; printf '\n%%\n'`},
	{name: "printf %b and %q", script: `printf '%b\n' 'a\tb'; printf '[%s]\n' "a b"`},
	{name: "seq", script: `seq 3; seq 2 4; seq 1 2 7; seq -s, 3; seq 5 -1 3; seq -w 8 10`},
	{name: "basename dirname", script: `basename /a/b/c.txt; basename /a/b/c.txt .txt; basename dir/; dirname /a/b/c; dirname file; dirname /`},
	{name: "tee", script: `echo hi | tee /tmp/t.$$ | tr a-z A-Z; cat /tmp/t.$$; echo more | tee -a /tmp/t.$$ >/dev/null; cat /tmp/t.$$; rm /tmp/t.$$`},
	{name: "xargs", script: `printf 'a\nb\nc\n' | xargs echo; printf 'a b c d\n' | xargs -n 2 echo; ls src/*.go | xargs grep -c func`},
	{name: "xargs -I", script: `printf 'x\ny\n' | xargs -I{} echo 'item {} done'`},
	{name: "xargs empty", script: `printf '' | xargs echo run; printf '' | xargs -r echo run; echo $?`},
	{name: "sha256sum md5sum", script: `sha256sum data.txt; md5sum data.txt words.txt; echo -n abc | sha256sum; echo x | md5sum`},
	{name: "sha256sum -c", script: `sha256sum data.txt > /tmp/h.$$; sha256sum -c /tmp/h.$$; echo $?; rm /tmp/h.$$`},
	{name: "jq basic", script: `jq .name obj.json; jq -r .name obj.json; jq '.items | length' obj.json; jq -c .nested obj.json`},
	{name: "jq pretty", script: `jq -S . obj.json`},
	{name: "jq key order", script: `jq . obj.json`, skip: "gojq always sorts object keys; jq keeps input order (use jq -S for identical output)"},
	{name: "jq filters", script: `jq -r '.items[] | select(. > 1)' obj.json; jq '[.items[] * 2] | add' obj.json; jq -r '.tags | join(",")' obj.json`},
	{name: "jq -e", script: `jq -e '.nested.a' obj.json; echo $?; jq -e '.nested.b' obj.json; echo $?; jq -e .missing obj.json; echo $?`},
	{name: "jq stdin stream and -s", script: `jq -c 'select(.ok)' lines.jsonl; jq -s 'length' lines.jsonl; cat lines.jsonl | jq '.id'`},
	{name: "jq --arg -n", script: `jq -n -c --arg v hi '{greeting: $v}'; jq -n '1 + 2'; jq -n --argjson n 5 '$n * 2'`},
	{name: "jq has and keys", script: `jq -c 'keys' obj.json; jq 'has("name")' obj.json; jq -r '.items | map(tostring) | join(" ")' obj.json`},
	{name: "jq invalid json", script: `echo '{bad' | jq . >/dev/null 2>&1 || echo failed`},
	{name: "jq raw input", script: `jq -R . words.txt | head -2; jq -Rs 'split("\n") | length' words.txt`},
	{name: "true false", script: `true; echo $?; false; echo $?`},
	{name: "test via command", script: `test -f data.txt && echo yes; test -d data.txt || echo no; [ ]; echo $?`},
	{name: "grading idiom count", script: `count=$(grep -c apple data.txt); if [ "$count" -eq 2 ]; then echo PASS; else echo FAIL; exit 1; fi`},
	{name: "grading idiom compare", script: `expected='apple 3'; actual=$(head -1 data.txt); [ "$actual" = "$expected" ] && echo match`},
	{name: "grading idiom json", script: `test "$(jq -r '.items | length' obj.json)" = 3 && echo ok`},
	// more grading-script idioms
	{name: "set -euo pipefail grep none", script: "set -euo pipefail\nn=$(grep kiwi data.txt | wc -l)\necho \"n=$n\""},
	{name: "or exit idiom", script: "set -e\ngrep -q apple data.txt || exit 1\necho ok\ngrep -q kiwi data.txt || { echo 'missing kiwi'; exit 4; }"},
	{name: "if not grep", script: `if ! grep -q kiwi data.txt; then echo "no kiwi"; fi`},
	{name: "compare file contents", script: `[ "$(cat nonl.txt)" == "no newline" ] && echo same; [ -z "$(ls -A src/sub)" ] || echo notempty`},
	{name: "word splitting", script: `x="a  b"; echo $x; echo "$x"; IFS=,; y="1,2,3"; set -- $y; echo $# $2`},
	{name: "dollar star and at", script: `set -- a b c; IFS=-; echo "$*"; unset IFS; for a in "$@"; do printf '%s.' "$a"; done; echo`},
	{name: "case modification", script: `x=Hello; echo ${x^^} ${x,,} ${x:1:3} ${x: -2}`},
	{name: "arith forms", script: `echo $((16#ff)) $((0x10)) $((7 > 3)) $(( (2+3)*4 )); (( 5 > 3 )) && echo bigger; x=3; (( x-- )); echo $x`},
	{name: "read -a and IFS read", script: `IFS=: read -r a b c <<< "x:y:z"; echo "$b"; read -ra arr <<< "p q r"; echo ${arr[2]} ${#arr[@]}`},
	{name: "read last line without newline", script: `while IFS= read -r line || [ -n "$line" ]; do echo "[$line]"; done < nonl.txt`},
	{name: "printf arrays", script: `arr=(one "two three" four); printf '%s\n' "${arr[@]}"; printf '%03d|%x|%o\n' 7 255 8`},
	{name: "nested quotes in cmdsubst", script: `echo "$(echo "a  b")"; echo "$(printf '%s' "$(echo inner)")"`},
	{name: "heredoc redirect to file", script: "cat <<EOF > /tmp/h.$$\nx=\\$notvar $((2*3))\nEOF\ncat /tmp/h.$$; rm /tmp/h.$$"},
	{name: "command -v", script: `command -v jq >/dev/null && echo have-jq; command -v nosuchtool || echo none`},
	{name: "return without value", script: `f() { false; return; }; f; echo $?; g() { true; }; g; echo $?`},
	{name: "exit in pipeline subshell", script: `echo x | { read v; exit 5; }; echo "after $?"`},
	{name: "grep -c no match", script: `grep -c kiwi data.txt; echo $?`},
	{name: "grep dash pattern", script: `printf -- '--flag\nother\n' | grep -e --flag; printf -- '--flag\n' | grep -q -- --flag && echo yes`},
	{name: "grep comments and blanks", script: `printf '# c\n\nx\n  # d\ny\n' | grep -v '^#' | grep -v '^$' | grep -v '^[[:space:]]*#'`},
	{name: "grep -E alternation anchors", script: `grep -E '^(apple|date) [0-9]+$' data.txt; grep -Ec 'a|e' data.txt`},
	{name: "grep -o -i -w", script: `echo 'Foo foo food' | grep -o -i -w foo`},
	{name: "sed common", script: `sed -n 's/apple/X/p' data.txt; printf 'a\n\nb\n' | sed '/^$/d'; printf 'x   \n' | sed 's/[[:space:]]*$//' | wc -c`},
	{name: "sed line ranges", script: `sed -n '2,4p' a.txt; sed '$d' data.txt | tail -1; sed -n '3,+1p' a.txt; sed -n '1~3p' a.txt`},
	{name: "sed \\s and \\+", script: `echo 'a   b    c' | sed 's/\s\+/ /g'; echo 'aaa' | sed 's/a*/X/'`},
	{name: "awk idioms", script: `awk 'length > 5' words.txt; awk 'NR%2==0' a.txt; awk '{ $1=""; print }' data.txt; awk '{print substr($0, 2)}' words.txt | head -2`},
	{name: "awk reverse lines", script: `awk '{a[NR]=$0} END{for(i=NR;i>0;i--) print a[i]}' data.txt`},
	{name: "awk average", script: `awk '{sum+=$2} END {printf "%.2f\n", sum/NR}' data.txt`},
	{name: "awk tab FS and BEGIN FS", script: `awk -F'\t' '{print $2}' tabs.tsv; awk 'BEGIN{FS=","} NR==2{print $3}' people.csv; awk -F: '{print NF}' <<< 'a:b::c'`},
	{name: "awk print to file", script: `awk '{print $1 > "/tmp/aw.'$$'"}' data.txt; sort -u /tmp/aw.$$; rm /tmp/aw.$$`},
	{name: "awk uniq idiom", script: `awk '!seen[$1]++' data.txt; awk '{print $1}' data.txt | sort | uniq -c | sort -rn | awk '{print $2}' | head -1`},
	{name: "awk printf widths", script: `awk 'BEGIN{printf "%5s|%-5s|%05d|%.3s|%c|%e\n", "ab", "cd", 42, "abcdef", 65, 1234.5}'`},
	{name: "awk comparisons of fields", script: `printf '10 9\n2 10\nabc abd\n' | awk '{print ($1 < $2)}'`},
	{name: "awk in and delete", script: `awk 'BEGIN{a["x"]=1; a["y"]=2; delete a["x"]; print ("x" in a), ("y" in a), length(a)}'`},
	{name: "awk ternary and increments", script: `awk 'BEGIN{x=5; y = x > 3 ? "big" : "small"; print y, x++, x, ++x, x--, x}'`},
	{name: "awk multiple -f style statements", script: "awk '\nBEGIN { n = 0 }\n/a/ { n++ }\nEND {\n  if (n > 2)\n    print \"many\", n\n  else\n    print \"few\"\n}' data.txt"},
	{name: "head multiple files", script: `head -n1 data.txt words.txt; tail -n1 data.txt words.txt`},
	{name: "find pipe wc", script: `find . -type f | wc -l; find . -type f -name '*.go' | xargs wc -l | tail -1`},
	{name: "ls glob", script: `ls *.txt; ls -1 src/*.go`},
	{name: "sort -t -k", script: `printf 'b:2\na:10\nc:1\n' | sort -t: -k2 -n; printf 'b:2\na:10\nc:1\n' | sort -t: -k1,1`},
	{name: "sort stable keys and -c", script: `sort -k1,1 -s data.txt; sort -c data.txt; echo $?; sort data.txt | sort -c; echo $?`},
	{name: "tr newline to space", script: `tr '\n' ' ' < words.txt; echo; tr -d '\n' < words.txt | wc -c`},
	{name: "cut bytes and complement", script: `cut -b2 words.txt | head -2; cut -d, -f2 --complement people.csv | head -2`},
	{name: "xargs -n1 and -0", script: `printf 'a\0b c\0' | xargs -0 -n1 echo; echo 'x y' | xargs -n1 | wc -l`},
	{name: "diff -u identical exit", script: `diff -u a.txt a.txt; echo $?`},
	{name: "diff multiple hunks", script: `seq 1 30 > /tmp/da.$$; seq 1 30 | sed 's/^5$/five/; s/^25$/X/' > /tmp/db.$$; diff /tmp/da.$$ /tmp/db.$$; diff -u /tmp/da.$$ /tmp/db.$$ | tail -n +3; diff -U1 /tmp/da.$$ /tmp/db.$$ | tail -n +3; rm /tmp/d?.$$`},
	{name: "diff insert delete", script: `printf 'a\nb\nc\n' > /tmp/x1.$$; printf 'b\nc\nd\n' > /tmp/x2.$$; diff /tmp/x1.$$ /tmp/x2.$$; diff -u /tmp/x1.$$ /tmp/x2.$$ | tail -n +3; printf '' > /tmp/x3.$$; diff /tmp/x3.$$ /tmp/x1.$$; diff -u /tmp/x1.$$ /tmp/x3.$$ | tail -n +3; rm /tmp/x?.$$`},
	{name: "diff -w -i -b", script: `printf 'A  b\n' > /tmp/w1.$$; printf 'a b\n' > /tmp/w2.$$; diff -i -b /tmp/w1.$$ /tmp/w2.$$; echo $?; diff -w /tmp/w1.$$ /tmp/w2.$$ >/dev/null; echo $?; rm /tmp/w?.$$`},
	{name: "jq more filters", script: `jq -r '.nested | to_entries[] | "\(.key)=\(.value)"' obj.json; jq '.items | map(. * 10) | .[1]' obj.json; jq -r '.missing // "default"' obj.json; jq -c '[.[]?]' lines.jsonl`},
	{name: "jq exit on error", script: `jq '.name | tonumber' obj.json 2>/dev/null; echo $?`},
	{name: "seq and arithmetic loop", script: `total=0; for n in $(seq 1 10); do total=$((total + n)); done; echo $total`},
	{name: "basename in loop", script: `for f in src/*.go; do echo "$(basename "$f" .go)"; done`},
	{name: "md5sum check idiom", script: `[ "$(md5sum < data.txt | cut -d' ' -f1)" = "$(md5sum data.txt | awk '{print $1}')" ] && echo same-hash`},
	{name: "test -nt and string order", script: `[ a \< b ] && echo less; [[ b > a ]] && echo greater`},
	{name: "variable in double brackets unquoted", script: `x=""; [[ -z $x ]] && echo empty; y="a b"; [[ $y == "a b" ]] && echo spaced`},
	{name: "unset function and var", script: `f() { echo f; }; unset -f f; f 2>/dev/null; echo $?; v=1; unset v; echo "${v-unset}"`},
	{name: "local shadows and restores", script: `x=1; f() { local x; x=2; g; }; g() { echo "g sees $x"; }; f; echo "after $x"`},
	{name: "readonly", script: `readonly R=1; R=2 2>/dev/null; echo $R`, skip: "assigning a readonly variable ends a bash script with status 1; the toolbox reports it and goes on"},
	{name: "background job", script: `echo bg & wait; echo fg`, skip: "& runs the command to completion before going on (no job control)"},
	{name: "local from failing cmdsubst", script: "set -e\nf() { local x=$(false); echo \"local ok $?\"; }\nf"},
	{name: "grep -P", script: `grep -P '\d+$' data.txt | head -2; grep -oP '[a-z]+(?= )' data.txt | head -1`, skip: "look-around is not in RE2; grep -P uses Go's Perl-like syntax without it"},
	{name: "grep -P digits", script: `grep -P '^\w+ \d{2}$' data.txt`},
	{name: "tilde", script: `cd ~ && pwd >/dev/null && echo ok`},
	{name: "grading idiom diff", script: "diff <(sort words.txt) <(sort words.txt) && echo same", skip: "process substitution <(...) is not supported: it needs named pipes"},
	// builtins stop reading options at their first name and at "--", as bash's do
	{name: "declare options end at the first name", script: `declare a=1 -x; echo $?; export b=2 -n; echo $?; env | grep -c '^a='`},
	{name: "shopt options end at the first name", script: `shopt -s nullglob -u; echo $?; echo none*`},
	{name: "trap and read take --", script: `trap -- 'echo bye' EXIT; read -- x <<< hi; echo $x`},
	{name: "unset takes --", script: `x=1; unset -- x; echo "[$x]"`},
}

func writeFixture(t *testing.T, dir string) {
	t.Helper()
	for name, body := range fixture {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func testEnv(dir string) []string {
	return []string{"LC_ALL=C", "PATH=/usr/bin:/bin", "HOME=" + dir}
}

type outcome struct {
	stdout, stderr string
	code           int
}

func runBash(t *testing.T, script string) outcome {
	t.Helper()
	dir := t.TempDir()
	writeFixture(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = testEnv(dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("bash: %v", err)
	}
	return outcome{out.String(), errb.String(), code}
}

func runToolbox(t *testing.T, script string) outcome {
	t.Helper()
	dir := t.TempDir()
	writeFixture(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	r := New(dir, testEnv(dir), bytes.NewReader(nil), &out, &errb)
	code := r.Run(ctx, script)
	return outcome{out.String(), errb.String(), code}
}

// TestConformanceWithBash runs each row through bash and through the toolbox shell in
// identical directories and requires the same stdout and exit status.
func TestConformanceWithBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bash is required for the conformance test in CI")
		}
		t.Skip("bash not installed")
	}
	for _, c := range conformance {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			want := runBash(t, c.script)
			got := runToolbox(t, c.script)
			if got.stdout != want.stdout || got.code != want.code {
				t.Errorf("script:\n%s\n--- bash (exit %d):\n%s--- toolbox (exit %d):\n%s--- toolbox stderr:\n%s--- bash stderr:\n%s",
					c.script, want.code, want.stdout, got.code, got.stdout, got.stderr, want.stderr)
			}
			if (got.stderr == "") != (want.stderr == "") {
				t.Errorf("stderr presence differs: bash %q, toolbox %q", want.stderr, got.stderr)
			}
		})
	}
}
