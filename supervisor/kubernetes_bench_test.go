package supervisor

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/task"
)

// TestKubeBench is make bench's Kubernetes row (scripts/bench-kube.sh runs it with
// CEVAL_BENCH_KUBE=1): a trivial task's run on the cluster beside a bare Pod of the same image
// running the same command, created, watched to its end and deleted through the API by this
// same process, interleaved; it prints the medians as a bench row. Not a test otherwise.
func TestKubeBench(t *testing.T) {
	if os.Getenv("CEVAL_BENCH_KUBE") != "1" {
		t.Skip("make bench runs this (CEVAL_BENCH_KUBE=1)")
	}
	k := kubeTestOptions(t)
	tk, err := task.Load("../bench/trivial.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 9
	var cevalMS, bareMS []float64
	run := func() float64 {
		start := time.Now()
		res, err := kubeRun(t, k, tk, Options{})
		if err != nil || res.Status != "SUCCESS" {
			t.Fatalf("ceval run: %v %+v", err, res)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	bare := func(i int) float64 {
		start := time.Now()
		if err := barePod(kubetest.Clientset(t, k.Cluster), k.Namespace, fmt.Sprintf("bare-%d-%d", os.Getpid(), i), task.DefaultImage); err != nil {
			t.Fatal(err)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	run() // warm: the node's image, the WASM cache
	_ = bare(0)
	for i := 1; i <= n; i++ {
		cevalMS = append(cevalMS, run())
		bareMS = append(bareMS, bare(i))
	}
	mc, mb := median(cevalMS), median(bareMS)
	t.Logf("ceval run on the cluster: %v ms; bare Pod: %v ms", cevalMS, bareMS)
	fmt.Printf("BENCH\tceval run --backend kubernetes, trivial task (median)\t%.0f\tbare Pod of the same image through the API\t%.0f\tms\t-\n", mc, mb)
}

// barePod creates a Pod of image running /bin/true, watches it to Succeeded and deletes it:
// what running a container on the cluster costs with nothing of ceval's.
func barePod(cs kubernetes.Interface, ns, name, image string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := cs.CoreV1().Pods(ns)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: corev1.PullNever, Command: []string{"/bin/true"}}},
	}}
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return err
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			break
		}
	}
	return pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
