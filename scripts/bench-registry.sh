#!/usr/bin/env bash
# Registry pulls: `ceval images pull` of a ~100 MB image (one incompressible layer) from the
# loopback registry (scripts/registry.sh: TLS, htpasswd) beside `ctr images pull` of the same
# image, interleaved, each from an empty content store (target: ceval within 1.1x; ceval also
# preflights every layer). Then a warm run: a task naming the image by digest, present and
# pinned, run with the registry stopped (no registry round trip is possible), beside the same
# run in the local default image.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-5}
BIN=${BIN:-bin/ceval}
SOCK=${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}
NS=${CEVAL_NAMESPACE:-ceval}
SIZE_MB=${SIZE_MB:-100}
work=$(mktemp -d)
cleanup() { scripts/registry.sh stop "$work/reg" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
now() { date +%s%N; }
ctr_() { ctr -a "$SOCK" -n "$NS" "$@"; }

scripts/registry.sh install >/dev/null   # docker-registry, apache2-utils, openssl (apt, if missing)
scripts/registry.sh start "$work/reg" >"$work/env"
set -a; . "$work/env"; set +a
reg=$CEVAL_TEST_REGISTRY
mkdir -p "$work/hosts/$reg"
cp "$CEVAL_TEST_REGISTRY_CA" "$work/hosts/$reg/ca.crt"
# ctr takes a loopback registry for plain HTTP unless hosts.toml says https.
printf 'server = "https://%s"\n\n[host."https://%s"]\n  ca = "%s"\n' "$reg" "$reg" "$work/hosts/$reg/ca.crt" >"$work/hosts/$reg/hosts.toml"
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$reg" "$(printf '%s:%s' "$CEVAL_TEST_REGISTRY_USER" "$CEVAL_TEST_REGISTRY_PASSWORD" | base64 -w0)" >"$work/docker.json"
rflags=(--hosts-dir "$work/hosts" --docker-config "$work/docker.json")

# The image: one uncompressed layer of SIZE_MB random bytes, as an OCI archive.
python3 - "$work/big.tar" "$SIZE_MB" <<'PY'
import hashlib, io, json, os, platform, sys, tarfile
out, mb = sys.argv[1], int(sys.argv[2])
arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w") as tf:
    data = os.urandom(mb << 20)
    ti = tarfile.TarInfo("data"); ti.size = len(data); ti.mode = 0o644
    tf.addfile(ti, io.BytesIO(data))
lb = layer.getvalue()
def blob(b): return "sha256:" + hashlib.sha256(b).hexdigest()
cfg = json.dumps({"architecture": arch, "os": "linux", "config": {}, "rootfs": {"type": "layers", "diff_ids": [blob(lb)]}}).encode()
man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
  "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": blob(cfg), "size": len(cfg)},
  "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": blob(lb), "size": len(lb)}]}).encode()
idx = json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": blob(man), "size": len(man),
  "annotations": {"io.containerd.image.name": "ceval.local/bench-registry-big:v1"}}]}).encode()
with tarfile.open(out, "w") as tf:
    for name, b in [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), ("index.json", idx)] + [("blobs/sha256/" + blob(x)[7:], x) for x in (lb, cfg, man)]:
        ti = tarfile.TarInfo(name); ti.size = len(b); ti.mode = 0o644
        tf.addfile(ti, io.BytesIO(b))
PY
"$BIN" images import "$work/big.tar" >/dev/null
ref=$reg/bench/big:v1
"$BIN" images push ceval.local/bench-registry-big:v1 "$ref" "${rflags[@]}" >/dev/null 2>&1
ctr_ images rm --sync ceval.local/bench-registry-big:v1 >/dev/null

gone() { ctr_ images rm --sync "$ref" >/dev/null 2>&1 || true; }
ceval_ms=(); ctr_ms=()
for i in $(seq 1 "$N"); do
  gone
  t0=$(now); "$BIN" images pull "$ref" "${rflags[@]}" >/dev/null 2>&1; t1=$(now)
  gone
  t2=$(now); ctr_ images pull --hosts-dir "$work/hosts" --user "$CEVAL_TEST_REGISTRY_USER:$CEVAL_TEST_REGISTRY_PASSWORD" "$ref" >/dev/null; t3=$(now)
  ceval_ms+=($(( (t1 - t0) / 1000000 ))); ctr_ms+=($(( (t3 - t2) / 1000000 )))
done
gone
mc=$(median "${ceval_ms[@]}"); mr=$(median "${ctr_ms[@]}")
echo "ceval images pull ($SIZE_MB MB, loopback TLS registry): median $mc ms over $N; each: ${ceval_ms[*]}"
echo "ctr images pull (same image):                     median $mr ms over $N; each: ${ctr_ms[*]}"
bench_row "ceval images pull, ${SIZE_MB} MB (median)" "$mc" "ctr images pull" "$mr" ms 1.1x

# Warm run: the default image pushed, named by digest in a task, pulled once; then the
# registry is stopped and every run still starts (no round trip).
"$BIN" images build-default >/dev/null
dref=$reg/bench/default:v1
"$BIN" images push ceval.local/default:latest "$dref" "${rflags[@]}" >/dev/null 2>&1
dig=$(ctr_ images ls | awk -v n="ceval.local/default:latest" '$1 == n { print $3 }')
sed "s|^sandbox:|sandbox:\n  image: $reg/bench/default@$dig|" bench/trivial.yaml >"$work/pinned.yaml"
"$BIN" run --runs-dir "$work/runs" "${rflags[@]}" "$work/pinned.yaml" >/dev/null 2>&1   # pulls by digest
"$BIN" run --runs-dir "$work/runs" bench/trivial.yaml >/dev/null 2>&1                  # warm the default's caches
scripts/registry.sh stop "$work/reg"
pin_ms=(); local_ms=()
for i in $(seq 1 "$N"); do
  t0=$(now); "$BIN" run --runs-dir "$work/runs" "${rflags[@]}" "$work/pinned.yaml" >/dev/null 2>&1; t1=$(now)
  "$BIN" run --runs-dir "$work/runs" bench/trivial.yaml >/dev/null 2>&1; t2=$(now)
  pin_ms+=($(( (t1 - t0) / 1000000 ))); local_ms+=($(( (t2 - t1) / 1000000 )))
done
ctr_ images rm --sync "$reg/bench/default@$dig" >/dev/null 2>&1 || true
mp=$(median "${pin_ms[@]}"); ml=$(median "${local_ms[@]}")
echo "ceval run, image pinned by digest, registry stopped: median $mp ms over $N (each succeeded); each: ${pin_ms[*]}"
echo "ceval run, local default image:                      median $ml ms over $N; each: ${local_ms[*]}"
bench_row "ceval run, pinned registry image, registry down" "$mp" "ceval run, local image" "$ml" ms 1.1x
