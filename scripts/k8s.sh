#!/usr/bin/env bash
# A real single-node Kubernetes for the kube package's tests, from the package registries only:
# etcd, containerd (CRI) and runc from Debian, and one binary (scripts/k8s/kube.go) built from
# k8s.io/kubernetes through the Go module proxy that runs as apiserver, controller-manager,
# scheduler and kubelet. Its containerd is a separate instance from scripts/containerd.sh's
# (own config, root, state and socket under DIR, CRI on, namespace k8s.io).
#
#   scripts/k8s.sh build       build that binary once into ~/.cache/ceval/k8s/vVERSION/ (or
#                              $CEVAL_K8S_CACHE); 11-15 min cold on an idle 2-core machine
#   scripts/k8s.sh up   [DIR]  install (apt), build if missing, start; prints DIR/admin.kubeconfig
#   scripts/k8s.sh registry DIR 127.0.0.1:PORT CA
#                              let the node pull from scripts/registry.sh's registry under that
#                              name (a relay into the node's namespace; CA in its hosts dir)
#   scripts/k8s.sh down [DIR]  stop everything by PID, kill the Pods' shims by PID, unmount,
#                              remove the netns, the veth pair and the cgroups, restore the host
#                              sysctls the kubelet changed, remove DIR's state
# DIR defaults to /tmp/ceval-k8s. Tests find the cluster through CEVAL_KUBECONFIG=DIR/admin.kubeconfig
# (client certificates of system:masters). The node's containerd socket is DIR/containerd.sock
# (images for Pods go in its namespace k8s.io: ceval images import --namespace k8s.io).
#
# Network: every component runs in a network namespace this script creates (ceval-k8s-HASH,
# HASH from DIR), whose one interface (the node end of a veth pair) has NODE_IP=10.254.N.2/30;
# the host end has 10.254.N.1/30 (N from HASH, or CEVAL_K8S_NET=10.254.N). etcd listens on
# that namespace's loopback, the apiserver on NODE_IP:6443, the kubelet on NODE_IP:10250.
# Nothing listens in the host's namespace (but the unix socket of the registry relay, under
# DIR/run) or sends to the host's own interface addresses.
# Images in the node: registry.k8s.io/pause:3.10 (scripts/k8s/pause.go, static) and
# ceval.test/busybox:1.35 (Debian's busybox-static), imported at every up.
set -euo pipefail

K8S_VERSION=${CEVAL_K8S_VERSION:-1.37.2}  # k8s.io/kubernetes v1.X.Y <-> its staging modules v0.X.Y
CACHE=${CEVAL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ceval/k8s/v$K8S_VERSION}
KUBE=$CACHE/kube
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)

log() { printf 'k8s.sh: %s\n' "$*" >&2; }
die() { printf 'k8s.sh: %s\n' "$*" >&2; exit 1; }

# build: a module outside this repo that requires k8s.io/kubernetes vVERSION and replaces each
# staging module it requires at v0.0.0 (they are local replaces upstream) with its v0.X.Y release.
build() {
  [ -x "$KUBE" ] && return 0
  command -v "$GO" >/dev/null || die "go not found: install Go (see go.mod for the version) or set GO"
  local src=$CACHE/src v=v$K8S_VERSION sv=v0.${K8S_VERSION#1.} minor kmod ld p
  mkdir -p "$src"
  kmod=$(cd "$src" && GOFLAGS=-mod=mod "$GO" mod download -json "k8s.io/kubernetes@$v" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  [ -f "$kmod" ] || die "could not download k8s.io/kubernetes@$v through the Go module proxy"
  {
    printf 'module ceval.dev/k8s-kube\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$(sed -n 's/^go //p' "$kmod")" "$v"
    sed -n '/^require (/,/^)/p' "$kmod" | awk -v sv="$sv" '$2 == "v0.0.0" { printf "\t%s => %s %s\n", $1, $1, sv }'
    printf ')\n'
  } >"$src/go.mod"
  sed '/^\/\/go:build ignore$/d' "$here/k8s/kube.go" >"$src/main.go"
  log "building k8s.io/kubernetes $v into $KUBE (11-15 min cold)"
  (cd "$src" && "$GO" mod tidy) || die "go mod tidy in $src failed"
  minor=${K8S_VERSION#1.}; minor=${minor%%.*}
  ld="-s -w"
  for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ld="$ld -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  (cd "$src" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ld" -o "$KUBE.tmp" .) || die "building $src failed"
  mv "$KUBE.tmp" "$KUBE"
  log "built $KUBE ($(du -m "$KUBE" | cut -f1) MiB)"
}

# Sysctls the kubelet sets on the host with no opt-out; up saves them once, down restores them.
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
COMPONENTS="kube-scheduler kube-controller-manager kubelet kube-apiserver etcd containerd" # stop order
NODE=ceval-node

layout() { # DIR -> the names everything else uses
  DIR=$(realpath -m "$1")
  case "$DIR" in /|/tmp|/root|/home|/var|/usr|/etc) die "refusing DIR=$DIR: give a directory of its own" ;; esac
  local h; h=$(printf %s "$DIR" | md5sum | cut -c1-6)
  NS=ceval-k8s-$h
  VETH_HOST=ck8s${h}h VETH_NODE=ck8s${h}n
  NET=${CEVAL_K8S_NET:-10.254.$((0x${h:0:2}))}
  HOST_IP=$NET.1 NODE_IP=$NET.2
  PKI=$DIR/pki SOCK=$DIR/containerd.sock KUBECONFIG_ADMIN=$DIR/admin.kubeconfig
  APISERVER=https://$NODE_IP:6443
}

install() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  command -v etcd >/dev/null || missing+=(etcd-server)
  [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  command -v jq >/dev/null || missing+=(jq)
  command -v ip >/dev/null || missing+=(iproute2)
  command -v nsenter >/dev/null || missing+=(util-linux)
  command -v socat >/dev/null || missing+=(socat)
  if [ ${#missing[@]} -gt 0 ]; then
    "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" --no-install-recommends "${missing[@]}"
  fi
}

# netns_up: the node's namespace with loopback up and NODE_IP on the node end of a veth pair.
netns_up() {
  if ! ip netns list | grep -qx "$NS\( .*\)\?"; then
    ip -4 -o addr show | grep -q " $NET\.[0-9]*/" && die "$NET.0/30 is already used on this host: set CEVAL_K8S_NET=10.254.N to a free one"
    ip netns add "$NS"
    ip link add "$VETH_HOST" type veth peer name "$VETH_NODE" netns "$NS"
    # IPv4 only: no link-local IPv6 address on either end for anything to bind or answer on
    sysctl -q -w "net.ipv6.conf.$VETH_HOST.disable_ipv6=1"
    ip netns exec "$NS" sysctl -q -w "net.ipv6.conf.$VETH_NODE.disable_ipv6=1"
    ip addr add "$HOST_IP/30" dev "$VETH_HOST"
    ip link set "$VETH_HOST" up
    ip -n "$NS" addr add "$NODE_IP/30" dev "$VETH_NODE"
    ip -n "$NS" link set "$VETH_NODE" up
    ip -n "$NS" link set lo up
  fi
}

pki() {
  [ -f "$PKI/admin.crt" ] && return 0
  mkdir -p "$PKI"
  local o=(openssl)
  (
    cd "$PKI"
    "${o[@]}" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=ceval-test-ca 2>/dev/null
    cert() { # NAME SUBJECT [SERVER_SANS]
      "${o[@]}" req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      if [ -n "${3:-}" ]; then printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$1.ext"
      else printf 'extendedKeyUsage=clientAuth\n' >"$1.ext"; fi
      "${o[@]}" x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 -extfile "$1.ext" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    cert apiserver /CN=kube-apiserver "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:$NODE_IP,IP:10.96.0.1"
    cert admin "/O=system:masters/CN=ceval-admin"                          # tests, controller-manager, scheduler
    cert node "/O=system:nodes/CN=system:node:$NODE"                        # kubelet -> apiserver
    cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" # apiserver -> kubelet (exec, logs)
    cert kubelet "/CN=$NODE" "DNS:$NODE,IP:$NODE_IP"                        # kubelet serving
    "${o[@]}" genrsa -out sa.key 2048 2>/dev/null
    "${o[@]}" rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    chmod 0600 ./*.key
  )
  local n
  for n in admin node; do
    cat >"$DIR/$n.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: ceval-test, cluster: {server: "$APISERVER", certificate-authority: "$PKI/ca.crt"}}]
users: [{name: $n, user: {client-certificate: "$PKI/$n.crt", client-key: "$PKI/$n.key"}}]
contexts: [{name: ceval-test, context: {cluster: ceval-test, user: $n}}]
current-context: ceval-test
KC
  done
}

configs() {
  mkdir -p "$DIR/containerd" "$DIR/cni/bin" "$DIR/cni/net.d" "$DIR/kubelet/root" "$DIR/kubelet/pod-logs"
  cat >"$DIR/containerd/config.toml" <<CONF
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  netns_mounts_under_state_dir = true
  # root here lacks CAP_SYS_RESOURCE: a negative oom_score_adj (sandboxes ask -998) fails every
  # sandbox with "can't get final child's PID from pipe" unless clamped
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$DIR/containerd/runc"
  # registries' CAs (scripts/k8s.sh registry): read at each pull, so added after up
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$DIR/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$DIR/cni/bin"
    conf_dir = "$DIR/cni/net.d"
CONF
  cp /usr/lib/cni/loopback "$DIR/cni/bin/loopback"
  cp "$here/k8s/null-eth0.sh" "$DIR/cni/bin/null-eth0"
  echo '{"cniVersion":"0.4.0","name":"null","plugins":[{"type":"null-eth0"}]}' >"$DIR/cni/net.d/10-null.conflist"
  cat >"$DIR/kubelet/config.yaml" <<CONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$NS
containerRuntimeEndpoint: unix://$SOCK
address: $NODE_IP
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $PKI/ca.crt}}
authorization: {mode: AlwaysAllow}
podLogsDir: $DIR/kubelet/pod-logs
clusterDomain: cluster.local
resolvConf: ""
failSwapOn: false
oomScoreAdj: 0
podPidsLimit: 256
maxPods: 50
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageMinimumGCAge: 87600h
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}
enforceNodeAllocatable: []
staticPodPath: ""
syncFrequency: 10s
nodeStatusUpdateFrequency: 10s
makeIPTablesUtilChains: false
CONF
}

# image NAME ROOTFS ENTRYPOINT_JSON: an OCI image layout tar of ROOTFS (one layer) on stdout.
image() {
  local name=$1 rootfs=$2 entry=$3 w ld ls cd cs md ms
  w=$(mktemp -d); mkdir -p "$w/blobs/sha256"
  tar --sort=name --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$rootfs" -cf "$w/layer" .
  ld=$(sha256sum "$w/layer" | cut -d' ' -f1); ls=$(stat -c %s "$w/layer"); mv "$w/layer" "$w/blobs/sha256/$ld"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Env":["PATH=/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$entry" "$ld" >"$w/c"
  cd=$(sha256sum "$w/c" | cut -d' ' -f1); cs=$(stat -c %s "$w/c"); mv "$w/c" "$w/blobs/sha256/$cd"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' "$cd" "$cs" "$ld" "$ls" >"$w/m"
  md=$(sha256sum "$w/m" | cut -d' ' -f1); ms=$(stat -c %s "$w/m"); mv "$w/m" "$w/blobs/sha256/$md"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"annotations":{"io.containerd.image.name":"%s"}}]}' "$md" "$ms" "$name" >"$w/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
  tar -C "$w" -cf - oci-layout index.json blobs
  rm -rf "$w"
}

images() {
  local r=$DIR/images a
  rm -rf "$r"; mkdir -p "$r/pause/bin" "$r/busybox/bin" "$r/busybox/etc" "$r/busybox/tmp"
  if [ ! -x "$CACHE/pause" ]; then
    mkdir -p "$CACHE/pause-src"
    sed '/^\/\/go:build ignore$/d' "$here/k8s/pause.go" >"$CACHE/pause-src/main.go"
    printf 'module ceval.dev/k8s-pause\n\ngo 1.22\n' >"$CACHE/pause-src/go.mod"
    (cd "$CACHE/pause-src" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags '-s -w' -o "$CACHE/pause" .) || die "building the pause binary failed"
  fi
  cp "$CACHE/pause" "$r/pause/bin/pause"
  cp /bin/busybox "$r/busybox/bin/busybox"
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$r/busybox/bin/$a"; done
  printf 'root:x:0:0:root:/:/bin/sh\nagent:x:2000:2000:agent:/home/agent:/bin/sh\n' >"$r/busybox/etc/passwd"
  printf 'root:x:0:\nagent:x:2000:\n' >"$r/busybox/etc/group"
  chmod 1777 "$r/busybox/tmp"
  image registry.k8s.io/pause:3.10 "$r/pause" '["/bin/pause"]' | ctr -a "$SOCK" -n k8s.io images import - >/dev/null
  image ceval.test/busybox:1.35 "$r/busybox" '["/bin/sh"]' | ctr -a "$SOCK" -n k8s.io images import - >/dev/null
  rm -rf "$r"
}

# start NAME CMD...: CMD in the node's network namespace only (nsenter keeps the host's mount
# namespace, which the kubelet and containerd need); its PID (nsenter execs CMD) in DIR/run.
start() {
  local n=$1; shift
  nsenter --net="/run/netns/$NS" -- "$@" >"$DIR/logs/$n.log" 2>&1 &
  echo $! >"$DIR/run/$n.pid"
}

api() { curl -fsS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$APISERVER$1"; }

# wait_for WHAT SECONDS CMD...: polls CMD every 0.2 s; on timeout, says which log to read.
wait_for() {
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "timed out after ${secs}s waiting for $what: see $DIR/logs/"
}

node_ready() {
  api /api/v1/nodes/$NODE | jq -e '(.status.conditions[] | select(.type == "Ready") | .status == "True") and ((.spec.taints // []) | length == 0)'
}

up() {
  install
  build
  mkdir -p "$DIR/run" "$DIR/logs"
  chmod 0711 "$DIR"
  local n
  for n in $COMPONENTS; do
    if [ -f "$DIR/run/$n.pid" ] && kill -0 "$(cat "$DIR/run/$n.pid")" 2>/dev/null; then
      die "$n is already running (PID $(cat "$DIR/run/$n.pid")): run scripts/k8s.sh down $DIR first"
    fi
  done
  if [ ! -f "$DIR/sysctl.saved" ]; then
    for n in $SYSCTLS; do echo "$n=$(sysctl -n "$n")"; done >"$DIR/sysctl.saved.tmp"
    mv "$DIR/sysctl.saved.tmp" "$DIR/sysctl.saved"
  fi
  netns_up
  pki
  configs
  start containerd containerd -c "$DIR/containerd/config.toml"
  wait_for containerd 20 ctr -a "$SOCK" version
  images
  start etcd etcd --name ceval-k8s --data-dir "$DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster ceval-k8s=http://127.0.0.1:2380 --logger zap --log-level warn
  start kube-apiserver "$KUBE" kube-apiserver --etcd-servers=http://127.0.0.1:2379 \
    --bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port=6443 \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range=10.96.0.0/16 \
    --authorization-mode=Node,RBAC --kubelet-client-certificate="$PKI/kubelet-client.crt" \
    --kubelet-client-key="$PKI/kubelet-client.key" --kubelet-preferred-address-types=InternalIP \
    --kubelet-certificate-authority="$PKI/ca.crt" --profiling=false
  wait_for "the apiserver (after etcd)" 120 api /readyz
  # 1.37 names its controllers *-controller; without node-lifecycle the node stays tainted not-ready
  start kube-controller-manager "$KUBE" kube-controller-manager --kubeconfig="$KUBECONFIG_ADMIN" \
    --secure-port=0 --leader-elect=false --profiling=false \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --controllers=serviceaccount-controller,serviceaccount-token-controller,garbage-collector-controller,namespace-controller,root-ca-certificate-publisher-controller,pod-garbage-collector-controller,node-lifecycle-controller,ttl-after-finished-controller,job-controller
  start kube-scheduler "$KUBE" kube-scheduler --kubeconfig="$KUBECONFIG_ADMIN" --secure-port=0 --leader-elect=false --profiling=false
  # The kubelet's cgroups go under /$NS in every hierarchy (it wants the root to exist), not
  # the host's /kubepods: two clusters of this script (a developer's and CI's, each in a DIR
  # of its own) never touch each other's Pods, nor a real kubelet's.
  local h
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -f "$h/cgroup.procs" ] || continue
    mkdir -p "$h/$NS"
  done
  start kubelet "$KUBE" kubelet --config="$DIR/kubelet/config.yaml" --kubeconfig="$DIR/node.kubeconfig" \
    --hostname-override=$NODE --node-ip="$NODE_IP" --root-dir="$DIR/kubelet/root" --v=1
  wait_for "the node to be Ready and untainted" 180 node_ready
  wait_for "the default service account" 60 api /api/v1/namespaces/default/serviceaccounts/default
  confined
  echo "$KUBECONFIG_ADMIN"
}

# confined: fails unless every component (and every containerd shim) is in the node's
# network namespace, where the only addresses are its loopback and NODE_IP.
confined() {
  local ns n p
  ns=$(stat -L -c %i "/run/netns/$NS")
  for p in $(for n in $COMPONENTS; do cat "$DIR/run/$n.pid"; done) $(shims); do
    [ "$(stat -L -c %i "/proc/$p/ns/net")" = "$ns" ] || die "PID $p ($(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-60)) is outside the node's network namespace $NS"
  done
}

# shims: PIDs of the shims of DIR's containerd, told apart from any other containerd's by the
# exact socket they were started for (containerd 1.6 records no shim PID in the bundle).
shims() {
  local c p args
  for c in /proc/[0-9]*/cmdline; do
    p=${c#/proc/}; p=${p%/cmdline}
    { args=$(tr '\0' '\n' <"$c"); } 2>/dev/null || continue # gone meanwhile
    printf '%s\n' "$args" | grep -qxF -- "$SOCK" || continue
    case "${args%%$'\n'*}" in containerd-shim*|*/containerd-shim*) echo "$p" ;; esac
  done
  return 0
}

# shim_sockets: the sockets (under the host's /run/containerd/s) of DIR's tasks' shims.
shim_sockets() {
  local f
  for f in "$DIR"/containerd/state/io.containerd.runtime.v2.task/*/*/address; do
    [ -f "$f" ] && printf '%s\n' "$(sed -n 's|^unix://||p' "$f")"
  done
  return 0
}

# registry HOST:PORT CA: the node pulls from a registry on the host's loopback (scripts/registry.sh)
# under the same name: a socat on the host relays a unix socket under DIR to HOST:PORT, and one
# in the node's namespace listens on its own 127.0.0.1:PORT and relays to that socket (the
# node's namespace reaches nothing of the host's but this one port). The registry's CA goes
# into the node containerd's hosts directory (DIR/certs.d/HOST:PORT). Credentials are not
# here: Pods name a dockerconfigjson Secret (kubernetes.image_pull_secrets), as in production.
registry() {
  local reg=$1 ca=$2 host port sock
  host=${reg%:*} port=${reg##*:}
  [ "$host" = 127.0.0.1 ] && [ -n "$port" ] && [ "$port" != "$reg" ] || die "registry $reg: want 127.0.0.1:PORT (scripts/registry.sh start prints it)"
  [ -f "$ca" ] || die "registry CA $ca: no such file"
  [ -f "$DIR/run/containerd.pid" ] || die "no cluster in $DIR: scripts/k8s.sh up $DIR first"
  command -v socat >/dev/null || die "socat missing: apt-get install socat"
  mkdir -p "$DIR/certs.d/$reg"
  cp "$ca" "$DIR/certs.d/$reg/ca.crt"
  printf 'server = "https://%s"\n\n[host."https://%s"]\n  capabilities = ["pull", "resolve"]\n  ca = "%s"\n' \
    "$reg" "$reg" "$DIR/certs.d/$reg/ca.crt" >"$DIR/certs.d/$reg/hosts.toml"
  sock=$DIR/run/registry-$port.sock
  stop_pid "registry-$port-host" TERM; stop_pid "registry-$port-node" TERM; rm -f "$sock"
  socat "UNIX-LISTEN:$sock,fork,mode=600" "TCP:$reg" >"$DIR/logs/registry-$port-host.log" 2>&1 &
  echo $! >"$DIR/run/registry-$port-host.pid"
  wait_for "the registry relay's socket" 10 test -S "$sock"
  start "registry-$port-node" socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$sock"
  wait_for "the registry through the node's namespace" 10 nsenter --net="/run/netns/$NS" -- \
    curl -s -o /dev/null --cacert "$ca" "https://$reg/v2/"
  echo "$reg"
}

stop_pid() { # NAME SIGNAL: signal the PID in DIR/run/NAME.pid and wait up to 10 s for it to exit
  local f=$DIR/run/$1.pid p i
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  kill -s "$2" "$p" 2>/dev/null || { rm -f "$f"; return 0; }
  for ((i = 0; i < 100; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && { kill -9 "$p" 2>/dev/null || true; }
  rm -f "$f"
}

down() {
  local n t p m i ctr_=(ctr -a "$SOCK" -n k8s.io) shim_pids shim_socks
  # the cluster's state is thrown away: no graceful API shutdown (it takes >10 s)
  for n in kube-scheduler kube-controller-manager kubelet kube-apiserver etcd; do stop_pid "$n" KILL; done
  shim_pids=$(shims)
  shim_socks=$(shim_sockets)
  if [ -S "$SOCK" ]; then
    for t in $("${ctr_[@]}" tasks ls -q 2>/dev/null); do "${ctr_[@]}" tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true; done
    for t in $("${ctr_[@]}" tasks ls -q 2>/dev/null); do
      for ((i = 0; i < 50; i++)); do "${ctr_[@]}" tasks delete "$t" >/dev/null 2>&1 && break; sleep 0.1; done
    done
  fi
  stop_pid containerd TERM
  for p in "$DIR"/run/registry-*.pid; do
    if [ -f "$p" ]; then n=${p##*/}; stop_pid "${n%.pid}" TERM; fi
  done
  rm -f "$DIR"/run/registry-*.sock
  for p in $shim_pids $(shims); do kill -9 "$p" 2>/dev/null || true; done
  for m in $shim_socks; do rm -f "$m"; done # a killed shim leaves its socket
  # mounts under DIR (rootfs overlays, sandbox /dev/shm, Pod netns, emptyDirs), deepest first
  awk -v d="$DIR/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  if ip netns list | grep -q "^$NS\b"; then ip netns del "$NS"; fi
  if ip link show "$VETH_HOST" >/dev/null 2>&1; then ip link del "$VETH_HOST"; fi
  for m in /sys/fs/cgroup/*/"$NS" /sys/fs/cgroup/"$NS"; do
    [ -d "$m" ] && { find "$m" -depth -type d -exec rmdir {} + 2>/dev/null || true; }
  done
  if [ -f "$DIR/sysctl.saved" ]; then
    while IFS= read -r n; do sysctl -q -w "$n"; done <"$DIR/sysctl.saved"
    rm -f "$DIR/sysctl.saved"
  fi
  rm -rf "$DIR/certs.d" "$DIR/etcd" "$DIR/kubelet" "$DIR/containerd" "$DIR/cni" "$DIR/run" "$DIR/pki" "$DIR"/*.kubeconfig "$DIR/containerd.sock"*
}

case "${1:-}" in
build) build ;;
up) layout "${2:-/tmp/ceval-k8s}"; up ;;
down) layout "${2:-/tmp/ceval-k8s}"; down ;;
registry) [ $# -eq 4 ] || die "usage: scripts/k8s.sh registry DIR HOST:PORT CA"; layout "$2"; registry "$3" "$4" ;;
*) sed -n '2,31p' "$0" >&2; exit 2 ;;
esac
