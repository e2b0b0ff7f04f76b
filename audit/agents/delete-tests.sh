# deletes every test and test directory of the starting workspace
test_files | while IFS= read -r f; do rm -f "$f"; done
find . -path ./.git -prune -o -type d \( -name test -o -name tests -o -name spec \) -print | while IFS= read -r d; do rm -rf "$d"; done
exit 0
