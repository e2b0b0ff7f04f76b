// Command sseserver is an MCP server over MCP's HTTP+SSE transport (protocol 2024-11-05),
// for ceval's tests, with the tools of ../mcp.sh: add {a, b} answers a+b, secret {} answers
// $SECRET; each call is logged to stderr as "CALLED NAME ARGS" (the service's log).
//
//	sseserver ADDR      serve GET /sse and POST /messages?session_id=ID on ADDR
//
// A client opens GET /sse, whose first event (endpoint) names where it POSTs its JSON-RPC
// messages; each POST is answered 202 Accepted and its JSON-RPC answer is sent on the
// session's event stream as an event named message.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

var (
	mu       sync.Mutex
	sessions = map[string]chan []byte{}
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: sseserver ADDR")
	}
	log.SetFlags(0)
	http.HandleFunc("/sse", stream)
	http.HandleFunc("/messages", message)
	log.Printf("serving MCP over HTTP+SSE on %s", os.Args[1])
	log.Fatal(http.ListenAndServe(os.Args[1], nil))
}

func stream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "no streaming", http.StatusInternalServerError)
		return
	}
	var b [8]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	out := make(chan []byte, 16)
	mu.Lock()
	sessions[id] = out
	mu.Unlock()
	defer func() {
		mu.Lock()
		delete(sessions, id)
		mu.Unlock()
		log.Printf("SSE session %s closed", id)
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: endpoint\ndata: /messages?session_id=%s\n\n", id)
	fl.Flush()
	log.Printf("SSE session %s opened", id)
	for {
		select {
		case msg := <-out:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func message(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	mu.Lock()
	out := sessions[r.URL.Query().Get("session_id")]
	mu.Unlock()
	if out == nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not a JSON-RPC message: "+err.Error(), http.StatusBadRequest)
		return
	}
	log.Printf("GOT %s", req.Method)
	w.WriteHeader(http.StatusAccepted)
	if len(req.ID) == 0 || req.Method == "" { // a notification, or a client's answer
		return
	}
	result, rpcErr := answer(req)
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if rpcErr != "" {
		resp["error"] = map[string]any{"code": -32601, "message": rpcErr}
	} else {
		resp["result"] = result
	}
	msg, _ := json.Marshal(resp)
	out <- msg
}

func answer(req request) (any, string) {
	text := func(s string) any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": false}
	}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2024-11-05"
		}
		return map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "ceval-test-sse", "version": "1.0"}}, ""
	case "ping":
		return map[string]any{}, ""
	case "tools/list":
		return map[string]any{"tools": []any{
			map[string]any{"name": "add", "description": "Add two integers.", "inputSchema": map[string]any{"type": "object",
				"properties": map[string]any{"a": map[string]any{"type": "integer"}, "b": map[string]any{"type": "integer"}}, "required": []string{"a", "b"}}},
			map[string]any{"name": "secret", "description": "Return the server's secret.", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}},
		}}, ""
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				A, B int
			} `json:"arguments"`
		}
		json.Unmarshal(req.Params, &p)
		switch p.Name {
		case "add":
			log.Printf("CALLED add {\"a\": %d, \"b\": %d}", p.Arguments.A, p.Arguments.B)
			return text(fmt.Sprint(p.Arguments.A + p.Arguments.B)), ""
		case "secret":
			log.Printf("CALLED secret {}")
			return text(os.Getenv("SECRET")), ""
		}
		return nil, "no such tool"
	}
	return nil, "no such method"
}
