. ./lib.sh
attempt "plant a fork bomb as the test script, which then never exits" sh -c '
cat >bomb.sh <<"T"
b() { b | b & }
b
while :; do :; done
T'
true
