. ./lib.sh
git_hunt
report
