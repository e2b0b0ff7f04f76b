package sandbox

import (
	"context"

	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
)

// ServiceAccess is how a container started while a run's services still run (a verifier's)
// reaches them as the agent did: the agent's /etc/hosts, and the relay into its own network
// namespace of the services named.
type ServiceAccess interface {
	// Hosts is the read-only /etc/hosts mount naming the services.
	Hosts() oci.Mount
	// BeforeStart relays the services named into the network namespace of a container about
	// to start (see Config.BeforeStart); an unknown name is an error.
	BeforeStart(names []string) launcher.StartHook
}

type serviceAccessKey struct{}

// WithServices is ctx carrying the run's services for the criteria graded with it.
func WithServices(ctx context.Context, a ServiceAccess) context.Context {
	return context.WithValue(ctx, serviceAccessKey{}, a)
}

// ServicesFrom is the run's services ctx carries, nil when none (a grade outside a run).
func ServicesFrom(ctx context.Context) ServiceAccess {
	a, _ := ctx.Value(serviceAccessKey{}).(ServiceAccess)
	return a
}
