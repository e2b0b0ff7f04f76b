if [ "$1" = "--bogus" ]; then exit 2; fi
echo hello
