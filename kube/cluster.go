package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"time"

	"net/http"
	"net/url"
)

// Cluster is a connection to the Kubernetes API server ceval runs Pods through.
type Cluster struct {
	// Kubeconfig is the file Connect read (tests connect other clients with it).
	Kubeconfig string
	// Host is the API server's address, from the kubeconfig.
	Host string

	api *client

	fwd forwards // PortForward's connections, one per Pod
}

// Connect reads the kubeconfig file (its current context) and checks that the API server
// answers with the identity it holds.
func Connect(ctx context.Context, kubeconfig string) (*Cluster, error) {
	if kubeconfig == "" {
		return nil, errors.New("kubeconfig: no file given (pass --kubeconfig or set CEVAL_KUBECONFIG)")
	}
	api, err := loadKubeconfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := api.do(ctx, http.MethodGet, "/version", nil, nil, &version); err != nil {
		return nil, fmt.Errorf("API server %s (kubeconfig %s) does not answer: %w", api.host, kubeconfig, err)
	}
	return &Cluster{Kubeconfig: kubeconfig, Host: api.host.String(), api: api}, nil
}

// UserNamespaces reports whether every node's default runtime handler supports Pods with
// hostUsers: false (the kubelet refuses such a Pod where it does not).
func (c *Cluster) UserNamespaces(ctx context.Context) (bool, error) {
	var nodes NodeList
	if err := c.api.do(ctx, http.MethodGet, "/api/v1/nodes", nil, nil, &nodes); err != nil {
		return false, fmt.Errorf("list nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return false, errors.New("list nodes: the cluster has none")
	}
	for _, n := range nodes.Items {
		if !nodeSupportsUserNamespaces(n) {
			return false, nil
		}
	}
	return true, nil
}

func nodeSupportsUserNamespaces(n Node) bool {
	for _, h := range n.Status.RuntimeHandlers {
		if h.Name == "" && h.Features != nil && h.Features.UserNamespaces != nil && *h.Features.UserNamespaces {
			return true
		}
	}
	return false
}

// Run is one run's Pod and NetworkPolicy in the cluster.
type Run struct {
	cluster   *Cluster
	Namespace string
	Name      string
}

// Start creates the run's deny-all NetworkPolicy, then its Pod (so the Pod never exists
// without the policy). If the Pod cannot be created the policy is deleted again.
func (c *Cluster) Start(ctx context.Context, cfg Config) (*Run, error) {
	np, err := cfg.NetworkPolicy()
	if err != nil {
		return nil, err
	}
	pod, err := cfg.Pod()
	if err != nil {
		return nil, err
	}
	r := &Run{cluster: c, Namespace: pod.Namespace, Name: pod.Name}
	if err := c.api.do(ctx, http.MethodPost, policiesPath(np.Namespace), nil, np, nil); err != nil {
		return nil, fmt.Errorf("create network policy %s/%s: %w", np.Namespace, np.Name, err)
	}
	if err := c.api.do(ctx, http.MethodPost, podsPath(pod.Namespace), nil, pod, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err), r.deletePolicy(context.WithoutCancel(ctx)))
	}
	return r, nil
}

// Wait watches the Pod until its phase is Succeeded or Failed (or ctx ends) and returns it.
func (r *Run) Wait(ctx context.Context) (*Pod, error) {
	return r.waitFor(ctx, func(p *Pod) (bool, error) {
		return p.Status.Phase == PodSucceeded || p.Status.Phase == PodFailed, nil
	})
}

// waitFor watches the Pod until done says so (or fails). A deleted Pod is a *PodLostError.
func (r *Run) waitFor(ctx context.Context, done func(*Pod) (bool, error)) (*Pod, error) {
	var last *Pod
	p, err := r.cluster.api.watchPod(ctx, r.Namespace, r.Name, func(p *Pod) (bool, error) {
		last = p
		return done(p)
	}, func(msg string) error {
		return &PodLostError{Namespace: r.Namespace, Name: r.Name, Reason: "Deleted", Message: msg}
	})
	if err != nil {
		var lost *PodLostError
		if errors.As(err, &lost) {
			return last, err
		}
		if ctx.Err() != nil {
			// The watch may not have delivered the newest status (or any) before ctx ended.
			last = r.current(last)
			if last != nil {
				if lost := podLost(last); lost != nil {
					return last, errors.Join(lost, ctx.Err())
				}
			}
			if msg := unschedulable(last); msg != "" {
				return last, errors.Join(&PodLostError{Namespace: r.Namespace, Name: r.Name, Reason: PodReasonUnschedulable, Message: msg + " (still, when the wait ended)"}, ctx.Err())
			}
			return last, fmt.Errorf("wait for pod %s/%s (%s%s): %w", r.Namespace, r.Name, describePod(last), r.warnings(), err)
		}
		return last, fmt.Errorf("wait for pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	return p, nil
}

// current reads the Pod as it is now (bounded by a context of its own: the caller's has
// ended), or returns last when it cannot.
func (r *Run) current(last *Pod) *Pod {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := r.get(ctx)
	if err != nil {
		return last
	}
	return p
}

// get reads the Pod.
func (r *Run) get(ctx context.Context) (*Pod, error) {
	var p Pod
	if err := r.cluster.api.do(ctx, http.MethodGet, podPath(r.Namespace, r.Name), nil, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// warnings is "; warnings: REASON: MESSAGE, ..." of the Pod's Warning events, one per
// reason, newest first, at most three (the kubelet reports a sandbox it cannot create only
// there), or "".
func (r *Run) warnings() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var evs EventList
	err := r.cluster.api.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(r.Namespace)+"/events", url.Values{
		"fieldSelector": {"involvedObject.name=" + r.Name + ",type=" + EventTypeWarning},
	}, nil, &evs)
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	items := evs.Items
	sort.SliceStable(items, func(i, j int) bool { return items[j].LastTimestamp.Before(items[i].LastTimestamp) })
	var out []string
	seen := map[string]bool{}
	for _, e := range items {
		if !seen[e.Reason] && len(out) < 3 {
			seen[e.Reason] = true
			out = append(out, e.Reason+": "+strings.TrimSpace(e.Message))
		}
	}
	return "; warnings: " + strings.Join(out, ", ")
}

// Logs returns at most limit bytes of the agent container's output (stdout and stderr).
func (r *Run) Logs(ctx context.Context, limit int64) ([]byte, error) {
	resp, err := r.cluster.api.send(ctx, http.MethodGet, podPath(r.Namespace, r.Name)+"/log", url.Values{"container": {ContainerName}, "limitBytes": {fmt.Sprint(limit)}}, nil)
	if err != nil {
		return nil, fmt.Errorf("logs of pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	rc := resp.Body
	defer rc.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(rc, limit)); err != nil {
		return b.Bytes(), fmt.Errorf("logs of pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	return b.Bytes(), nil
}

// Delete removes the run's Pod at once (grace period 0: everything in it is killed) and its
// NetworkPolicy, and closes its port-forward streams. Objects already gone are not an error.
func (r *Run) Delete(ctx context.Context) error {
	r.cluster.closeForwards(r.Namespace, r.Name)
	err := r.cluster.api.do(ctx, http.MethodDelete, podPath(r.Namespace, r.Name), nil, deleteNow, nil)
	if err != nil && !IsNotFound(err) {
		err = fmt.Errorf("delete pod %s/%s: %w", r.Namespace, r.Name, err)
	} else {
		err = nil
	}
	return errors.Join(err, r.deletePolicy(ctx))
}

func (r *Run) deletePolicy(ctx context.Context) error {
	err := r.cluster.api.do(ctx, http.MethodDelete, policyPath(r.Namespace, r.Name), nil, deleteOptions, nil)
	if err != nil && !IsNotFound(err) {
		return fmt.Errorf("delete network policy %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// StartAgent starts the run (Start) and waits until its agent container runs, so ceval's
// init listens on ControlPort and Dial reaches it. Whatever stops it first is an error, and
// the Pod and policy are deleted again:
//   - a *PodLostError when the cluster took the Pod away or its node refused it (evicted,
//     preempted, deleted, OutOfcpu, ...), or when ctx ended while the Pod was still
//     unschedulable (the scheduler places it once capacity frees: ctx is the caller's bound
//     on waiting for room); the caller may retry with a new Pod;
//   - an image the node lacks (ErrImageNeverPull), naming the import that fixes it;
//   - the install container's failure, or the agent container ending first;
//   - ctx's end otherwise, saying where the Pod was stuck.
func (c *Cluster) StartAgent(ctx context.Context, cfg Config) (*Run, error) {
	r, err := c.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.withDefaults().StartTimeout)
	defer cancel()
	last, err := r.waitFor(wctx, agentStarted)
	if err != nil {
		// A Pod the scheduler could not place within StartTimeout is lost (the caller may
		// retry it): the cluster is full, or nothing in it fits the run's requests.
		if msg := unschedulable(last); msg != "" && ctx.Err() == nil && wctx.Err() != nil {
			err = &PodLostError{Namespace: r.Namespace, Name: r.Name, Reason: PodReasonUnschedulable, Message: msg}
		}
		return nil, errors.Join(err, r.Delete(context.WithoutCancel(ctx)))
	}
	return r, nil
}

// Dial opens a new connection to ceval's init in the Pod (its control port, through a
// port-forward stream): the first is the control connection, later ones carry relays.
func (r *Run) Dial(ctx context.Context) (net.Conn, error) {
	return r.cluster.PortForward(ctx, r.Namespace, r.Name, ControlPort)
}

// Lost returns a *PodLimitError when the Pod's own limits ended it (the agent's doing: never
// retried), a *PodLostError when the cluster took it away (evicted for the node's sake,
// preempted, deleted, its node lost), or nil while it is there or ended by itself: what a
// caller asks once a run's control channel failed, to tell a retry from a failed run.
func (r *Run) Lost(ctx context.Context) error {
	p, err := r.get(ctx)
	if IsNotFound(err) {
		return &PodLostError{Namespace: r.Namespace, Name: r.Name, Reason: "Deleted", Message: "the pod does not exist"}
	}
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	if lim := podLimit(p); lim != nil {
		return lim
	}
	if lost := podLost(p); lost != nil {
		return lost
	}
	if p.DeletionTimestamp != nil {
		return &PodLostError{Namespace: r.Namespace, Name: r.Name, Reason: "Deleted", Message: "the pod is being deleted"}
	}
	return nil
}

// WaitRunning watches the Pod until its agent container runs: StartAgent's wait, for a Pod
// already started (a Pod lost or ended first is an error, as there).
func (r *Run) WaitRunning(ctx context.Context) (*Pod, error) {
	return r.waitFor(ctx, agentStarted)
}

// Collect deletes, in namespace, every Pod and NetworkPolicy that ceval made for controller
// (label ceval.dev/controller): what a killed controller left behind. It returns how many
// objects it deleted; objects already gone are not an error.
func (c *Cluster) Collect(ctx context.Context, namespace, controller string) (int, error) {
	if len(controller) > 63 || !labelValue.MatchString(controller) {
		return 0, fmt.Errorf("collect: controller %q: want a label value", controller)
	}
	sel := url.Values{"labelSelector": {LabelManagedBy + "=" + ManagedBy + "," + LabelController + "=" + controller}}
	var pods PodList
	if err := c.api.do(ctx, http.MethodGet, podsPath(namespace), sel, nil, &pods); err != nil {
		return 0, fmt.Errorf("collect: list pods in %s: %w", namespace, err)
	}
	var nps NetworkPolicyList
	if err := c.api.do(ctx, http.MethodGet, policiesPath(namespace), sel, nil, &nps); err != nil {
		return 0, fmt.Errorf("collect: list network policies in %s: %w", namespace, err)
	}
	var n int
	var errs []error
	for _, p := range pods.Items {
		err := c.api.do(ctx, http.MethodDelete, podPath(namespace, p.Name), nil, deleteNow, nil)
		switch {
		case err == nil:
			n++
		case !IsNotFound(err):
			errs = append(errs, fmt.Errorf("collect: delete pod %s/%s: %w", namespace, p.Name, err))
		}
	}
	// Policies last: a Pod never outlives the policy that isolates it.
	for _, np := range nps.Items {
		err := c.api.do(ctx, http.MethodDelete, policyPath(namespace, np.Name), nil, deleteOptions, nil)
		switch {
		case err == nil:
			n++
		case !IsNotFound(err):
			errs = append(errs, fmt.Errorf("collect: delete network policy %s/%s: %w", namespace, np.Name, err))
		}
	}
	return n, errors.Join(errs...)
}
