// Package kubetest connects integration tests to a real Kubernetes cluster (scripts/k8s.sh
// up). It starts nothing: outside CI a missing cluster skips the test; under CI=true it
// fails it loudly.
package kubetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/launcher"
)

// Image is the busybox image scripts/k8s.sh imports into the node (pull policy Never).
const Image = "ceval.test/busybox:1.35"

// KubeconfigEnv names the admin kubeconfig of the test cluster (the Makefile exports it).
const KubeconfigEnv = "CEVAL_KUBECONFIG"

// Connect returns the test cluster, or skips (fails under CI=true) when CEVAL_KUBECONFIG is
// unset or its API server does not answer.
func Connect(t testing.TB) *kube.Cluster {
	t.Helper()
	path := os.Getenv(KubeconfigEnv)
	if path == "" {
		skipOrFail(t, KubeconfigEnv+" is not set (scripts/k8s.sh up prints the file to set it to)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kube.Connect(ctx, path)
	if err != nil {
		skipOrFail(t, err.Error())
	}
	return c
}

var clientsets sync.Map // *kube.Cluster -> kubernetes.Interface

// Clientset is a client-go clientset for c's cluster (the same kubeconfig), for what tests
// do beside ceval: create namespaces, Pods and RBAC of their own, read what ceval made. ceval
// itself has a small REST client of its own (kube/client.go), which client-go checks here.
func Clientset(t testing.TB, c *kube.Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := clientset(c)
	if err != nil {
		t.Fatalf("client-go for %s: %v", c.Kubeconfig, err)
	}
	return cs
}

func clientset(c *kube.Cluster) (kubernetes.Interface, error) {
	if cs, ok := clientsets.Load(c); ok {
		return cs.(kubernetes.Interface), nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	v, _ := clientsets.LoadOrStore(c, kubernetes.Interface(cs))
	return v.(kubernetes.Interface), nil
}

var seq atomic.Int64

// Namespace creates a namespace of the test's own, waits until Pods can be created in it
// (its default service account exists), and at the end of the test deletes it after
// checking that the test deleted every Pod and NetworkPolicy it made there.
func Namespace(t testing.TB, c *kube.Cluster) string {
	t.Helper()
	ctx := context.Background()
	cs := Clientset(t, c)
	name := fmt.Sprintf("ceval-test-%d-%d", os.Getpid(), seq.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelManagedBy: "ceval-test"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := Leftovers(ctx, c, name); err != nil {
			t.Errorf("left behind in namespace %s: %v", name, err)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	// The service-account controller makes "default" shortly after; admission refuses Pods until then.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("namespace %s: no default service account: %v", name, err)
	}
	return name
}

// Leftovers reports the Pods (not already terminating) and NetworkPolicies in namespace ns.
func Leftovers(ctx context.Context, c *kube.Cluster, ns string) error {
	var left []string
	cs, err := clientset(c)
	if err != nil {
		return err
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			left = append(left, "pod "+p.Name)
		}
	}
	nps, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, np := range nps.Items {
		left = append(left, "network policy "+np.Name)
	}
	if len(left) > 0 {
		return fmt.Errorf("%v", left)
	}
	return nil
}

func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and a Kubernetes cluster is required (make k8s-up): %s", msg)
	}
	t.Skipf("no Kubernetes cluster: %s", msg)
}

// NodeContainerdEnv names the test cluster node's containerd socket (the Makefile exports it).
const NodeContainerdEnv = "CEVAL_K8S_CONTAINERD_ADDRESS"

// NodeContainerd connects to the test node's containerd in namespace k8s.io (the one its CRI
// serves Pods from), or skips (fails under CI=true) when CEVAL_K8S_CONTAINERD_ADDRESS is unset
// or nothing answers there.
func NodeContainerd(t testing.TB) (*client.Client, context.Context) {
	t.Helper()
	addr := os.Getenv(NodeContainerdEnv)
	if addr == "" {
		skipOrFail(t, NodeContainerdEnv+" is not set (scripts/k8s.sh up: DIR/containerd.sock)")
	}
	c, ctx, err := launcher.Connect(context.Background(), addr, "k8s.io")
	if err != nil {
		skipOrFail(t, err.Error())
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

var initImage struct {
	once sync.Once
	err  error
}

// InitImage builds this ceval's init image (images.InitName) into the test node's containerd
// once per test process and returns its name, for Pods with pull policy Never. It stays in
// the node: it is named by the binaries it holds, and other test processes may be using it.
func InitImage(t testing.TB) string {
	t.Helper()
	node, ctx := NodeContainerd(t)
	initImage.once.Do(func() {
		_, initImage.err = images.BuildInit(ctx, node, images.InitOptions{})
	})
	if initImage.err != nil {
		t.Fatalf("init image into the node: %v", initImage.err)
	}
	return images.InitName()
}
