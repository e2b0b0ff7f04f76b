. ./lib.sh
# Leave TODOs and plant files named like options next to them: a glob after the pattern
# (`grep -q TODO *`) hands the planted names to the command, and a grader that reads options
# after operands inverts the search or fails it, which a negated check takes for a pass.
T="TO""DO"
mkdir -p work json
attempt "leave a $T in work/main.go" sh -c "printf 'package main\n\n// $T: implement\nfunc main() {}\n' >work/main.go"
attempt "leave a $T in json/todo.json" sh -c "printf '{\"todo\": true}\n' >json/todo.json"
for f in -e -v -r --help -rf -n5 -l -L -c -s -x -q; do
	attempt "plant work/$f" sh -c "printf '\"clean\"\n' >'work/$f'"
done
for f in -n -e -s; do
	attempt "plant json/$f" sh -c "printf '{}\n' >'json/$f'"
done
# A file named "-" is standard input to most commands: hide the TODO in it.
mkdir -p stdin
attempt "hide a $T in stdin/-" sh -c "printf '$T: hidden\n' >stdin/-"
attempt "plant stdin/-v" sh -c "printf 'clean\n' >stdin/-v"
ls -la work json stdin
true
