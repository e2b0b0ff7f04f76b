#!/usr/bin/env bash
# Private OCI registry for development and CI: Debian's docker-registry on 127.0.0.1 with TLS
# from a CA this script makes (openssl) and htpasswd basic auth, everything under one directory.
#
#   scripts/registry.sh install          apt-get install docker-registry apache2-utils openssl (if missing)
#   scripts/registry.sh start DIR [PORT] start it (default PORT: a free one); prints the env to use
#   scripts/registry.sh env   DIR        print that env again
#   scripts/registry.sh stop  DIR        stop it by PID
#
# The env (also in DIR/env): CEVAL_TEST_REGISTRY=127.0.0.1:PORT, CEVAL_TEST_REGISTRY_CA=DIR/ca.crt,
# CEVAL_TEST_REGISTRY_USER, CEVAL_TEST_REGISTRY_PASSWORD. The CA is trusted by nobody: give it to
# ceval as HOSTS_DIR/127.0.0.1:PORT/ca.crt (containerd's hosts directory format).
set -euo pipefail

cmd=${1:-}
dir=${2:-}

need_dir() { [ -n "$dir" ] || { echo "usage: $0 $cmd DIR" >&2; exit 2; }; }

case "$cmd" in
install)
  missing=()
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  command -v htpasswd >/dev/null || missing+=(apache2-utils)
  command -v openssl >/dev/null || missing+=(openssl)
  if [ ${#missing[@]} -gt 0 ]; then
    "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" "${missing[@]}"
  fi
  ;;
start)
  need_dir
  command -v docker-registry >/dev/null || { echo "docker-registry missing: $0 install (apt-get install docker-registry apache2-utils)" >&2; exit 1; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then cat "$dir/env"; exit 0; fi
  port=${3:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
  umask 077
  if [ ! -f "$dir/ca.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=ceval test registry CA" \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
      -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  fi
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
    -extfile "$dir/server.ext" -out "$dir/server.crt" 2>/dev/null
  user=ceval password=$(openssl rand -hex 12)
  htpasswd -Bbc "$dir/htpasswd" "$user" "$password" 2>/dev/null
  mkdir -p "$dir/storage"
  cat >"$dir/config.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: $(openssl rand -hex 16)
  tls:
    certificate: $dir/server.crt
    key: $dir/server.key
auth:
  htpasswd:
    realm: ceval-test
    path: $dir/htpasswd
CONF
  docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 1 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$dir/ca.crt" "https://127.0.0.1:$port/v2/" 2>/dev/null || true)
    [ "$code" = 401 ] && break
    kill -0 "$(cat "$dir/pid")" 2>/dev/null || { tail -20 "$dir/registry.log" >&2; exit 1; }
    sleep 0.1
  done
  [ "$code" = 401 ] || { echo "registry did not answer on 127.0.0.1:$port" >&2; tail -20 "$dir/registry.log" >&2; exit 1; }
  cat >"$dir/env" <<ENV
CEVAL_TEST_REGISTRY=127.0.0.1:$port
CEVAL_TEST_REGISTRY_CA=$dir/ca.crt
CEVAL_TEST_REGISTRY_USER=$user
CEVAL_TEST_REGISTRY_PASSWORD=$password
ENV
  cat "$dir/env"
  ;;
env)
  need_dir
  cat "$dir/env"
  ;;
stop)
  need_dir
  [ -f "$dir/pid" ] || exit 0
  pid=$(cat "$dir/pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
  ;;
*)
  echo "usage: $0 install | start DIR [PORT] | env DIR | stop DIR" >&2
  exit 2
  ;;
esac
