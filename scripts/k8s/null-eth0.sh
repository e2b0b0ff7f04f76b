#!/bin/sh
# null-eth0: the test cluster's CNI network plugin. It creates nothing, so a Pod's network
# namespace keeps only the loopback interface (containerd runs the real loopback plugin
# itself), but reports an eth0 with a /32 address derived from the container ID, because
# containerd 1.6's CRI refuses a sandbox whose network result has no IP.
cat >/dev/null
case "$CNI_COMMAND" in
ADD)
  h=$(printf %s "$CNI_CONTAINERID" | md5sum | cut -c1-4)
  printf '{"cniVersion":"0.4.0","interfaces":[{"name":"eth0","sandbox":"%s"}],"ips":[{"version":"4","interface":0,"address":"10.255.%d.%d/32"}]}' \
    "$CNI_NETNS" "$((0x$(echo "$h" | cut -c1-2)))" "$((0x$(echo "$h" | cut -c3-4)))"
  ;;
VERSION) printf '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}' ;;
esac
