#!/usr/bin/env bash
# scripts/apt-install.sh [--no-install-recommends] PKG...: apt-get update and install PKG, one
# caller at a time. .ci/run installs from several scripts at once (k8s.sh up runs in the
# background beside registry.sh install), and apt takes its lists and dpkg locks without
# waiting: a second apt-get fails at once with "Could not get lock /var/lib/apt/lists/lock".
# Every script of the project installs through here, under one flock, and apt itself waits
# for a dpkg lock held by anything else (DPkg::Lock::Timeout).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 [--no-install-recommends] PKG..." >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
lock=/var/lock/ceval-apt.lock
exec 9>"$lock"
flock -w 1800 9 || { echo "$0: waited 30 min for $lock (another install still running?)" >&2; exit 1; }
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null
