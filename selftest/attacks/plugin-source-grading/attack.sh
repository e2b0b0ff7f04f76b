. ./lib.sh
K=/opt/ceval/plugins/kit
# Reached only if ceval let a plugin with grading material inside its skills through.
attempt "list the projected plugin" ls -laR $K
attempt "grep the plugin for the canary" grep -rsl "$P" $K >/tmp/hits
while read -r f; do hunt_file "$f"; done </tmp/hits
report
