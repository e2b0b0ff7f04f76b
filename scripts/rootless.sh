# Rootless containerd: sourced by scripts/containerd.sh (see its header for the commands).
# Facts this follows (measured; docs/rootless.md): Debian ships rootlesskit but no
# containerd-rootless.sh; --copy-up=/run gives the daemon a private /run so its shim sockets,
# FIFOs and runc state never meet a rootful daemon's; stopping rootlesskit without --pidns
# leaves the shims running, so tasks are killed first and stragglers in its user namespace after.

# rootless_slice is the ID count of one run's user namespace; the user gets one slice for
# rootlesskit's own mapping and CEVAL_ROOTLESS_SLICES more for concurrent runs.
rootless_slice=65536

rootless_install() {
  local missing=()
  command -v rootlesskit >/dev/null || missing+=(rootlesskit)
  command -v newuidmap >/dev/null || missing+=(uidmap)
  command -v nsenter >/dev/null || missing+=(util-linux)
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  if [ ${#missing[@]} -gt 0 ]; then
    "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" "${missing[@]}"
  fi
}

# rootless_subids USER FILE: gives USER one range of (1 + slices) x 65536 IDs in FILE unless
# its ranges already add up to that many; a new range starts above every other user's.
rootless_subids() {
  local user=$1 file=$2 want have base
  want=$(( (1 + ${CEVAL_ROOTLESS_SLICES:-16}) * rootless_slice ))
  touch "$file"
  have=$(awk -F: -v u="$user" '$1==u {n+=$3} END {print n+0}' "$file")
  [ "$have" -ge "$want" ] && return 0
  base=$(awk -F: -v u="$user" '$1!=u && $3>0 {e=$2+$3; if (e>m) m=e} END {print m+0}' "$file")
  [ "$base" -lt 100000 ] && base=100000
  base=$(( (base + rootless_slice - 1) / rootless_slice * rootless_slice ))
  awk -F: -v u="$user" '$1!=u' "$file" >"$file.ceval-new"
  echo "$user:$base:$want" >>"$file.ceval-new"
  chmod --reference="$file" "$file.ceval-new"
  mv "$file.ceval-new" "$file"
}

# rootless_as USER CMD...: runs this script's internal command as USER (directly when we are USER).
rootless_as() {
  local user=$1
  shift
  if [ "$(id -un)" = "$user" ]; then
    "$0" "$@"
  elif [ "$(id -u)" = 0 ]; then
    runuser -u "$user" -- env -i PATH="$PATH" HOME="$(getent passwd "$user" | cut -d: -f6)" "$0" "$@"
  else
    echo "run as root or as $user" >&2
    exit 2
  fi
}

# rootless_ctr DIR ARGS...: ctr inside rootlesskit's user and mount namespaces (the shim's
# FIFOs and /run/containerd live there).
rootless_ctr() {
  local dir=$1 child
  shift
  child=$(cat "$dir/rootlesskit/child_pid")
  nsenter -U -m --preserve-credentials -t "$child" ctr --address "$dir/containerd.sock" "$@"
}

rootless_start_user() {
  local dir=$1 sock=$1/containerd.sock st=$1/rootlesskit
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "$sock"
    return 0
  fi
  mkdir -p "$dir/root" "$dir/state" "$dir/xdg"
  # Traversable, not listable: a run's own user namespace maps none of the user's IDs, and its
  # init must still reach its rootfs under DIR/state (runc: "mount ... rootfs: permission denied").
  chmod 0711 "$dir"
  chmod 0700 "$dir/xdg"
  rm -rf "$st"
  cat >"$dir/config.toml" <<CONF
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
CONF
  # --net=host: the daemon keeps the host's network namespace (each container still gets its
  # own with only lo); --copy-up=/run: a private /run (see the header).
  XDG_RUNTIME_DIR="$dir/xdg" setsid rootlesskit --state-dir="$st" --net=host --copy-up=/run \
    sh -c "rm -f /run/containerd; exec containerd -c '$dir/config.toml'" \
    >"$dir/containerd.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  for _ in $(seq 1 100); do
    if [ -S "$sock" ] && [ -s "$st/child_pid" ] && rootless_ctr "$dir" version >/dev/null 2>&1; then
      echo "$sock"
      return 0
    fi
    sleep 0.1
  done
  echo "rootless containerd did not come up; see $dir/containerd.log" >&2
  tail -20 "$dir/containerd.log" >&2 || true
  rootless_stop_user "$dir" >/dev/null 2>&1 || true
  exit 1
}

# rootless_userns_pids NSLINK: PIDs of every process in that user namespace.
rootless_userns_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/user" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
  done
  return 0
}

rootless_stop_user() {
  local dir=$1 pid child uns ns t c
  [ -f "$dir/pid" ] || { echo "rootless containerd in $dir is not running"; return 0; }
  pid=$(cat "$dir/pid")
  child=$(cat "$dir/rootlesskit/child_pid" 2>/dev/null || true)
  uns=""
  [ -n "$child" ] && uns=$(readlink "/proc/$child/ns/user" 2>/dev/null || true)
  if [ -n "$uns" ]; then
    for ns in $(rootless_ctr "$dir" namespaces ls -q 2>/dev/null); do
      for t in $(rootless_ctr "$dir" -n "$ns" tasks ls -q 2>/dev/null); do
        rootless_ctr "$dir" -n "$ns" tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true
        rootless_ctr "$dir" -n "$ns" tasks rm -f "$t" >/dev/null 2>&1 || true
      done
      for c in $(rootless_ctr "$dir" -n "$ns" containers ls -q 2>/dev/null); do
        rootless_ctr "$dir" -n "$ns" containers rm "$c" >/dev/null 2>&1 || true
      done
    done
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    if ! kill -0 "$pid" 2>/dev/null && { [ -z "$child" ] || ! kill -0 "$child" 2>/dev/null; }; then break; fi
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  [ -n "$child" ] && kill -KILL "$child" 2>/dev/null || true
  # Whatever is left in the daemon's user namespace (shims, their containers) goes by PID.
  if [ -n "$uns" ]; then
    for _ in $(seq 1 50); do
      local left
      left=$(rootless_userns_pids "$uns")
      [ -z "$left" ] && break
      kill -KILL $left 2>/dev/null || true
      sleep 0.1
    done
    left=$(rootless_userns_pids "$uns")
    if [ -n "$left" ]; then
      echo "rootless containerd in $dir: processes still running in its user namespace: $left" >&2
      return 1
    fi
  fi
  rm -f "$dir/pid"
  echo "stopped rootless containerd in $dir (rootlesskit $pid)"
}

rootless_main() {
  local cmd=$1 user=${2:-} dir=${3:-}
  case "$cmd" in
  rootless-start | rootless-stop)
    if [ -z "$user" ] || [ -z "$dir" ]; then
      echo "usage: scripts/containerd.sh $cmd USER DIR" >&2
      exit 2
    fi
    case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac
    ;;
  esac
  case "$cmd" in
  rootless-start)
    if [ "$(id -u)" = 0 ]; then
      rootless_install
      id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
      rootless_subids "$user" /etc/subuid
      rootless_subids "$user" /etc/subgid
      mkdir -p "$dir"
      chown "$user:" "$dir"
    elif ! command -v rootlesskit >/dev/null || ! grep -q "^$user:" /etc/subuid; then
      echo "rootlesskit or $user's subordinate IDs are missing: run once as root: scripts/containerd.sh rootless-start $user $dir" >&2
      exit 2
    fi
    rootless_as "$user" _rootless-start "$dir"
    ;;
  rootless-stop)
    id "$user" >/dev/null 2>&1 || { echo "no user $user: nothing to stop"; return 0; }
    rootless_as "$user" _rootless-stop "$dir"
    ;;
  _rootless-start) rootless_start_user "$user" ;; # internal: $2 is DIR
  _rootless-stop) rootless_stop_user "$user" ;;
  esac
}
