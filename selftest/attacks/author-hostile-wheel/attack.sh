. ./lib.sh
# Reached only if ceval let the task's hostile wheel through. The agent never sees a task's
# wheels (they exist only in the WASM sandbox, at /ceval/packages); it looks anyway.
attempt "look for the wheel's payload" sh -c 'find / -xdev -name "evil_hook.pth" 2>/dev/null | head -5'
report
