package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/sandbox/kubernetes"
)

// Backends: where ceval run puts each run's agent.
const (
	backendLocal      = "local"
	backendKubernetes = "kubernetes"
)

// kubeConfig is the config file's kubernetes section (see userConfig).
type kubeConfig struct {
	Kubeconfig                    string   `yaml:"kubeconfig"`
	Namespace                     string   `yaml:"namespace"`
	InitImage                     string   `yaml:"init_image"`
	ImagePullPolicy               string   `yaml:"image_pull_policy"`
	ImagePullSecrets              []string `yaml:"image_pull_secrets"`
	RuntimeClass                  string   `yaml:"runtime_class"`
	UserNamespaces                string   `yaml:"user_namespaces"`
	AcceptUnenforcedNetworkPolicy bool     `yaml:"accept_unenforced_network_policy"`
	// Registry and Images map ceval's own images to the registry the nodes pull from
	// (ceval images push --kubernetes pushes them there).
	Registry string            `yaml:"registry"`
	Images   map[string]string `yaml:"images"`
}

// nodeRegistry is the config's mapping of ceval.local images to the nodes' registry.
func (k kubeConfig) nodeRegistry() images.NodeRegistry {
	return images.NodeRegistry{Prefix: k.Registry, Images: k.Images}
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// checkBackendConfig checks the backend and kubernetes sections of the config file.
func checkBackendConfig(backend string, k *kubeConfig) error {
	switch backend {
	case "", backendLocal, backendKubernetes:
	default:
		return fmt.Errorf("backend %q: give local or kubernetes", backend)
	}
	if k == nil {
		return nil
	}
	var errs []error
	if k.Namespace != "" && (len(k.Namespace) > 63 || !dnsLabel.MatchString(k.Namespace)) {
		errs = append(errs, fmt.Errorf("kubernetes.namespace %q: want a DNS label", k.Namespace))
	}
	switch k.ImagePullPolicy {
	case "", "Never", "IfNotPresent", "Always":
	default:
		errs = append(errs, fmt.Errorf("kubernetes.image_pull_policy %q: give Never, IfNotPresent or Always", k.ImagePullPolicy))
	}
	for _, s := range k.ImagePullSecrets {
		if !kube.IsSecretName(s) {
			errs = append(errs, fmt.Errorf("kubernetes.image_pull_secrets: %q is not a Secret's name (a DNS subdomain)", s))
		}
	}
	switch k.UserNamespaces {
	case "", "auto", "true", "false":
	default:
		errs = append(errs, fmt.Errorf("kubernetes.user_namespaces %q: give auto, true or false", k.UserNamespaces))
	}
	if k.RuntimeClass != "" && (len(k.RuntimeClass) > 63 || !dnsLabel.MatchString(k.RuntimeClass)) {
		errs = append(errs, fmt.Errorf("kubernetes.runtime_class %q: want a DNS label", k.RuntimeClass))
	}
	if err := k.nodeRegistry().Check(); err != nil {
		errs = append(errs, err)
	} else if k.ImagePullPolicy == string(kube.PullNever) && !k.nodeRegistry().Empty() {
		errs = append(errs, errors.New("kubernetes.image_pull_policy Never with kubernetes.registry or kubernetes.images: the nodes would never pull the pushed images; drop image_pull_policy (IfNotPresent is then the default) or the mapping"))
	}
	return errors.Join(errs...)
}

// backendFlags are the flags that choose where runs go (ceval run, ceval gc).
type backendFlags struct {
	backend    string
	kubeconfig string
}

func (b *backendFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.backend, "backend", "", "where runs go: local (containerd on this machine) or kubernetes (a Pod per run; --namespace is then the Kubernetes namespace); config: backend")
	cmd.Flags().StringVar(&b.kubeconfig, "kubeconfig", "", "kubeconfig file of --backend kubernetes (default: config kubernetes.kubeconfig, $CEVAL_KUBECONFIG, $KUBECONFIG, ~/.kube/config)")
}

// kubernetes reports whether the Kubernetes backend is chosen (flag, else config).
func (b *backendFlags) kubernetes(ucfg userConfig) (bool, error) {
	v := b.backend
	if v == "" {
		v = ucfg.Backend
	}
	switch v {
	case "", backendLocal:
		return false, nil
	case backendKubernetes:
		return true, nil
	}
	return false, exitWith(exitInvalid, fmt.Errorf("--backend %q: give local or kubernetes", v))
}

// kubeconfigPath is the kubeconfig to use: the flag, the config, $CEVAL_KUBECONFIG,
// $KUBECONFIG (its first file), ~/.kube/config.
func (b *backendFlags) kubeconfigPath(k kubeConfig) string {
	if b.kubeconfig != "" {
		return b.kubeconfig
	}
	if k.Kubeconfig != "" {
		return k.Kubeconfig
	}
	for _, env := range []string{"CEVAL_KUBECONFIG", "KUBECONFIG"} {
		if v := os.Getenv(env); v != "" {
			return filepath.SplitList(v)[0]
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".kube", "config")
	}
	return ""
}

// kubeNamespace is the Kubernetes namespace: --namespace when given, else the config's, else "default".
func kubeNamespace(cmd *cobra.Command, g *globalOptions, k kubeConfig) string {
	if cmd.Flags().Changed("namespace") {
		return g.namespace
	}
	if k.Namespace != "" {
		return k.Namespace
	}
	return "default"
}

// kubeOptions connects to the cluster and returns the runs' Kubernetes options.
func (b *backendFlags) kubeOptions(ctx context.Context, cmd *cobra.Command, g *globalOptions, ucfg userConfig) (*kubernetes.Options, error) {
	var k kubeConfig
	if ucfg.Kubernetes != nil {
		k = *ucfg.Kubernetes
	}
	c, err := kube.Connect(ctx, b.kubeconfigPath(k))
	if err != nil {
		return nil, exitWith(exitInfraErr, err)
	}
	o := &kubernetes.Options{
		Cluster: c, Namespace: kubeNamespace(cmd, g, k), Controller: kube.ControllerID(),
		InitImage: k.InitImage, PullPolicy: kube.PullPolicy(k.ImagePullPolicy), RuntimeClassName: k.RuntimeClass,
		ImagePullSecrets:              k.ImagePullSecrets,
		AcceptUnenforcedNetworkPolicy: k.AcceptUnenforcedNetworkPolicy,
		Registry:                      k.nodeRegistry(),
	}
	if o.InitImage == "" {
		o.InitImage = images.InitName()
	}
	o.PullPolicy = k.pullPolicy()
	switch k.UserNamespaces {
	case "true":
		o.UserNamespaces = true
	case "", "auto":
		if o.UserNamespaces, err = c.UserNamespaces(ctx); err != nil {
			return nil, exitWith(exitInfraErr, err)
		}
	}
	return o, nil
}

// pullPolicy is the Pods' image pull policy: the config's, else IfNotPresent when ceval's
// images are mapped to a registry (the nodes pull them by digest), else Never (imported).
func (k kubeConfig) pullPolicy() kube.PullPolicy {
	switch {
	case k.ImagePullPolicy != "":
		return kube.PullPolicy(k.ImagePullPolicy)
	case !k.nodeRegistry().Empty():
		return kube.PullIfNotPresent
	}
	return kube.PullNever
}

// kubeSweep deletes what this controller left in the cluster (after Ctrl-C every run has
// deleted its own Pod already; this catches one that could not).
func kubeSweep(cmd *cobra.Command, o *kubernetes.Options) {
	if o == nil {
		return
	}
	n, err := o.Cluster.Collect(context.WithoutCancel(cmd.Context()), o.Namespace, o.Controller)
	switch {
	case err != nil:
		fmt.Fprintf(cmd.ErrOrStderr(), "ceval: deleting this run's Pods in %s: %v (ceval gc --backend kubernetes removes them)\n", o.Namespace, err)
	case n > 0:
		fmt.Fprintf(cmd.ErrOrStderr(), "ceval: deleted %d object(s) left in namespace %s\n", n, o.Namespace)
	}
}

// choose connects to the cluster when the Kubernetes backend is chosen (g.kube is then set).
func (b *backendFlags) choose(cmd *cobra.Command, g *globalOptions, ucfg userConfig) error {
	k, err := b.kubernetes(ucfg)
	if err != nil || !k {
		return err
	}
	g.kube, err = b.kubeOptions(cmd.Context(), cmd, g, ucfg)
	return err
}
