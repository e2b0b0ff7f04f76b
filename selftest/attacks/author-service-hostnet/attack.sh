. ./lib.sh
# Reached only if ceval ran a service on the host's network that the user never allowed: the
# run going ahead is the breach. The agent has no way to the service but its declared ports
# (none here); it looks at its own network anyway.
attempt "list the agent's interfaces" sh -c 'cat /proc/net/dev'
report
