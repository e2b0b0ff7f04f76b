#!/bin/bash
# Written for ceval's tests: the installer's tools only on Debian, uvx running python -m
# pytest inside an if, set -euo pipefail (the shim must hold under set -u).
set -euo pipefail

if [ -f /etc/debian_version ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q && apt-get install -y -q --no-install-recommends curl ca-certificates
fi
wget -qO- https://astral.sh/uv/install.sh | sh
. "$HOME/.local/bin/env"

if uvx --python 3.12 --with pytest python -m pytest @TESTS@/test_outputs.py --ctrf=@LOGS@/ctrf.json; then
  echo 1.0 > @LOGS@/reward.txt
else
  echo 0.0 > @LOGS@/reward.txt
fi
