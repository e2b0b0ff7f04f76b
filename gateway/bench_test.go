package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ceval.dev/ceval/gateway/transcript"
)

// BenchmarkGateway measures one streamed Messages call with a keep-alive client: straight
// to a local fake provider (direct), through the gateway forwarding to that provider
// (forward), and answered by the gateway from a fixture holding the same answer (replay).
// Each reports its p50 and p99 latency and, for the gateway, their ratio to direct's,
// measured in the same process. `make bench` runs it with -benchtime 2000x.
func BenchmarkGateway(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthropicStream)
	}))
	defer up.Close()

	cfg := floodCfg(Forward)
	cfg.WriteTimeout, cfg.ReadHeaderTimeout, cfg.ReadTimeout, cfg.IdleTimeout = 0, 0, 0, 0
	cfg.Providers = map[string]Provider{transcript.Anthropic: {BaseURL: up.URL, Key: realKey}}
	fwd, fwdAddr := serve(b, cfg)
	defer fwd.Close()
	cfg.Mode = Replay
	rep, repAddr := serve(b, cfg)
	defer rep.Close()

	var mu sync.Mutex
	direct := map[string]time.Duration{} // direct's p50 and p99, once measured
	for _, c := range []struct{ name, url string }{
		{"direct", up.URL},
		{"forward", "http://" + fwdAddr},
		{"replay", "http://" + repAddr},
	} {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			call := func() {
				req, _ := http.NewRequest(http.MethodPost, c.url+"/v1/messages", strings.NewReader(msgReq))
				req.Header.Set("x-api-key", dummyKey)
				req.Header.Set("content-type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), "message_stop") {
					b.Fatalf("%s: %d %v %.200s", c.name, resp.StatusCode, err, body)
				}
			}
			for range 50 { // warm the connections and the allocator
				call()
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				call()
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			p50, p99 := percentile(lat, .50), percentile(lat, .99)
			b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
			mu.Lock()
			defer mu.Unlock()
			if c.name == "direct" {
				direct["p50"], direct["p99"] = p50, p99
				if b.N > 1 {
					b.Logf("direct to the fake provider, %d calls: p50 %v, p99 %v", b.N, p50, p99)
				}
				return
			}
			if direct["p50"] == 0 {
				return
			}
			r50, r99 := float64(p50)/float64(direct["p50"]), float64(p99)/float64(direct["p99"])
			b.ReportMetric(r50, "p50-x-direct")
			b.ReportMetric(r99, "p99-x-direct")
			if b.N > 1 {
				b.Logf("gateway %s, %d calls: p50 %v (%.2fx direct, +%v), p99 %v (%.2fx direct)",
					c.name, b.N, p50, r50, p50-direct["p50"], p99, r99)
			}
		})
	}
}
