# empties every test and script of the starting workspace
script_files | while IFS= read -r f; do : > "$f"; done
exit 0
