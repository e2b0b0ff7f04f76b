//go:build ignore

// kube is the one binary scripts/k8s.sh builds from k8s.io/kubernetes and runs as every
// component of the test cluster: `kube COMPONENT FLAGS...`. It is built outside this
// module (in the user cache dir, keyed by version), hence the build tag.
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube kube-apiserver|kube-controller-manager|kube-scheduler|kubelet [flags]")
		os.Exit(2)
	}
	component := os.Args[1]
	os.Args = os.Args[1:]
	switch component {
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubelet":
		os.Exit(cli.Run(kubelet.NewKubeletCommand(context.Background())))
	default:
		fmt.Fprintf(os.Stderr, "kube: unknown component %q\n", component)
		os.Exit(2)
	}
}
