package importer

import "go.yaml.in/yaml/v3"

// composeNetworkMode maps a compose service's network_mode: host becomes the service's
// network: host, which ceval runs only when the user allows host networking (and refuses
// otherwise, naming the service); none is what a ceval service has anyway (loopback, its
// declared ports relayed to the agent); anything else (a bridge, another container's
// namespace) is unmapped. It reports whether the service is on the host's network.
func (c *conv) composeNetworkMode(s, k, v *yaml.Node, f string) bool {
	switch v.Value {
	case "host":
		set(s, "network", str("host"))
		c.note(k, f, "became network: host: ceval runs the service on the host's network only when the user allows host networking (--allow-host-network, as for an agent's sandbox.network: host) and refuses the task otherwise; the agent still reaches it only at its ports")
		return true
	case "none":
		c.note(k, f, "a ceval service's network is loopback only anyway (its ports relayed to the agent)")
	default:
		c.unmapped(k, f, "a ceval service has a network namespace of its own (loopback only, its ports relayed to the agent), or with network: host the host's; not compose's %q", v.Value)
	}
	return false
}

// composeHostNetDeps: a service on the host's network cannot reach the services it depends
// on in ceval (their ports are relayed into a service's own namespace, never the host's).
func (c *conv) composeHostNetDeps(depsKey *yaml.Node, field string) {
	if depsKey != nil {
		c.unmapped(depsKey, field+".depends_on", "a service on the host's network (network_mode: host) cannot reach the services it depends on in ceval: their ports are relayed into a service's own network namespace, never the host's")
	}
}
