// probe is a static binary an agent could leave in its workspace for a verifier criterion to
// run: it prints every trace of the agent's trust domain it can reach, one line each.
package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	// The agent's home: the verifier's is a fresh empty one.
	entries, _ := os.ReadDir("/home/agent")
	for _, e := range entries {
		fmt.Println("HOME", e.Name())
	}
	// The model gateway listens on the agent's loopback, port 80; mocks under /run/ceval.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:80", time.Second); err == nil {
		c.Close()
		fmt.Println("GATEWAY 127.0.0.1:80")
	}
	socks, _ := filepath.Glob("/run/ceval/*")
	for _, s := range socks {
		fmt.Println("RUN", s)
	}
	// Credentials in the environment of any process it can see.
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		data, _ := os.ReadFile(p)
		for _, kv := range strings.Split(string(data), "\x00") {
			k, _, _ := strings.Cut(kv, "=")
			if u := strings.ToUpper(k); strings.Contains(u, "KEY") || strings.Contains(u, "TOKEN") || strings.Contains(u, "SECRET") {
				fmt.Println("ENV", p, k)
			}
		}
	}
	fmt.Println("uid", os.Getuid())
}
