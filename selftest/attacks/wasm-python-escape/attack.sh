. ./lib.sh
T="{{TASK_DIR}}"
attempt "link to the host reference" ln -s "$T/reference/canary.txt" link.txt
attempt "link to /" ln -s / rootlink
attempt "plant a reader module" sh -c "printf 'import os\nprint(open(\"%s/reference/canary.txt\").read())\n' '$T' >reader.py"
attempt "plant a json shadow" sh -c "cp reader.py json.py"
ls -la
true
