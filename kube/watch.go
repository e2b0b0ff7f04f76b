package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// watchPod lists the one Pod name in namespace and then watches it, calling f with every
// state of it (the listed one first, then each change) until f returns done or an error, or
// the Pod is gone (gone is called, and its error returned), or ctx ends (ctx.Err()), or the
// server refuses the list (a 4xx: forbidden, bad request). A watch that ends is resumed from
// the last resource version seen (bookmarks included); one whose version expired (410 Gone),
// or that fails, lists again (after a second); a list that fails otherwise is retried. What client-go's
// informer and watchtools.UntilWithSync did for one object, written for it: they need its
// runtime.Scheme and typed clients.
func (c *client) watchPod(ctx context.Context, namespace, name string, f func(*Pod) (bool, error), gone func(msg string) error) (*Pod, error) {
	sel := "metadata.name=" + name
	var rv string
	relist := true
	for first := true; ; first = false {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if relist {
			var list PodList
			if err := c.do(ctx, http.MethodGet, podsPath(namespace), url.Values{"fieldSelector": {sel}}, nil, &list); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if refused(err) {
					return nil, err
				}
				if err := sleep(ctx, time.Second); err != nil {
					return nil, err
				}
				continue
			}
			var p *Pod
			for i := range list.Items {
				if list.Items[i].Name == name {
					p = &list.Items[i]
				}
			}
			if p == nil {
				if first {
					return nil, gone("the pod does not exist")
				}
				return nil, gone("the pod was deleted")
			}
			if done, err := f(p); done || err != nil {
				return p, err
			}
			rv, relist = list.ResourceVersion, false
		}
		p, next, err := c.watchOnce(ctx, namespace, sel, rv, f, gone)
		if p != nil || err != nil && !errors.Is(err, errRelist) {
			return p, err
		}
		if next != "" {
			rv = next
		}
		if errors.Is(err, errRelist) {
			relist = true
			if !IsGone(err) {
				if err := sleep(ctx, time.Second); err != nil {
					return nil, err
				}
			}
		}
	}
}

// errRelist: the watch failed; list again.
var errRelist = errors.New("watch failed")

// watchOnce runs one watch request from resource version rv. It returns the Pod (and f's
// error) when f is done or fails, gone's error when the Pod was deleted, or the last resource
// version seen when the stream ended (err nil: resume there) or failed (an errRelist).
func (c *client) watchOnce(ctx context.Context, namespace, sel, rv string, f func(*Pod) (bool, error), gone func(string) error) (*Pod, string, error) {
	// The server ends a watch after timeoutSeconds: 5 to 10 minutes, spread as client-go's reflector does.
	timeout := 300 + rand.IntN(300)
	q := url.Values{"watch": {"true"}, "fieldSelector": {sel}, "resourceVersion": {rv}, "allowWatchBookmarks": {"true"}, "timeoutSeconds": {fmt.Sprint(timeout)}}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(timeout+30)*time.Second)
	defer cancel()
	resp, err := c.send(wctx, http.MethodGet, podsPath(namespace), q, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", errors.Join(errRelist, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return nil, rv, ctx.Err()
			}
			return nil, rv, nil // the stream ended (timeoutSeconds, or a broken connection): resume
		}
		switch ev.Type {
		case "ADDED", "MODIFIED":
			var p Pod
			if err := json.Unmarshal(ev.Object, &p); err != nil {
				return nil, rv, errors.Join(errRelist, fmt.Errorf("watch event: %w", err))
			}
			rv = p.ResourceVersion
			if done, err := f(&p); done || err != nil {
				return &p, rv, err
			}
		case "DELETED":
			return nil, rv, gone("the pod was deleted")
		case "BOOKMARK":
			var p Pod
			if json.Unmarshal(ev.Object, &p) == nil && p.ResourceVersion != "" {
				rv = p.ResourceVersion
			}
		case "ERROR":
			var st Status
			_ = json.Unmarshal(ev.Object, &st)
			return nil, "", errors.Join(errRelist, &APIError{Code: int(st.Code), Reason: st.Reason, Message: st.Message})
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refused reports whether err is the API server's refusal of the request itself (a 4xx
// status but 408 and 429): asking again gets the same answer. Anything else (the network,
// the server's 5xx) is asked again while ctx lasts, as client-go's reflector does.
func refused(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code >= 400 && e.Code < 500 && e.Code != http.StatusRequestTimeout && e.Code != http.StatusTooManyRequests
}
