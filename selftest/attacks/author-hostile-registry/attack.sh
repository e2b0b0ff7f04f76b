. ./lib.sh
# Reached only if ceval pulled the image through the redirect: the layer the host's
# service sent is then the agent's root filesystem.
attempt "read what the host's service served" sh -c 'cat /internal.txt && echo proof > proof.txt'
report
