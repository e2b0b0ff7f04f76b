package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// A task's stdio MCP server lives in its service's container, not the agent's: the agent's
// CLI must not run the task's program with the agent's powers (or see its files), and the
// service must not see the agent's. The two modes below join them through the one channel
// services already have, a declared port that ceval relays into the agent's network
// namespace:
//
//	ceval-init --mcp-serve PORT -- ARGV...   (the service's process, run by its init)
//	ceval-init --mcp-relay HOST:PORT         (the stdio command the agent's CLI starts)
//
// --mcp-serve listens on the service's own loopback at PORT and starts ARGV once per
// connection with the connection as its stdin and stdout (its stderr is the service's
// log), as a CLI starts a stdio server once per session; at most mcpMaxSessions run at
// once. --mcp-relay copies its stdin to HOST:PORT and the answers to its stdout. Neither
// gives the agent anything it lacked: it could already connect to the declared port.
const (
	mcpRelayArg    = "--mcp-relay"
	mcpServeArg    = "--mcp-serve"
	mcpMaxSessions = 8
	mcpDialTimeout = 10 * time.Second
)

// mcpRelay is --mcp-relay HOST:PORT.
func mcpRelay(args []string) int {
	if len(args) != 1 {
		logf("usage: ceval-init " + mcpRelayArg + " HOST:PORT")
		return exitUsage
	}
	c, err := net.DialTimeout("tcp", args[0], mcpDialTimeout)
	if err != nil {
		logf(fmt.Sprintf("mcp relay: %v", err))
		return 1
	}
	defer c.Close()
	go func() {
		_, _ = io.Copy(c, os.Stdin)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite() // the server reads EOF, as on a closed stdin
		}
	}()
	_, _ = io.Copy(os.Stdout, c) // until the server ends the session
	return 0
}

// mcpServe is --mcp-serve PORT -- ARGV....
func mcpServe(args []string) int {
	if len(args) < 3 || args[1] != "--" || args[2] == "" {
		logf("usage: ceval-init " + mcpServeArg + " PORT -- ARGV...")
		return exitUsage
	}
	port, err := strconv.Atoi(args[0])
	if err != nil || port < 1 || port > 65535 {
		logf("mcp serve: bad port " + strconv.Quote(args[0]))
		return exitUsage
	}
	argv := args[2:]
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", args[0]))
	if err != nil {
		logf(fmt.Sprintf("mcp serve: %v", err))
		return 1
	}
	var mu sync.Mutex
	active := 0
	for {
		c, err := ln.Accept()
		if err != nil {
			logf(fmt.Sprintf("mcp serve: %v", err))
			return 1
		}
		mu.Lock()
		full := active >= mcpMaxSessions
		if !full {
			active++
		}
		mu.Unlock()
		if full {
			c.Close() // the client sees its session end at once
			continue
		}
		go func() {
			defer func() { mu.Lock(); active--; mu.Unlock() }()
			mcpSession(c.(*net.TCPConn), argv)
		}()
	}
}

// mcpSession runs one process of the server over one connection.
func mcpSession(c *net.TCPConn, argv []string) {
	f, err := c.File() // a blocking duplicate: the server reads and writes it as its stdio
	c.Close()
	if err != nil {
		logf(fmt.Sprintf("mcp serve: %v", err))
		return
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, os.Stderr
	if err := cmd.Start(); err != nil {
		logf(fmt.Sprintf("mcp serve: %v", err))
		return
	}
	f.Close() // the server holds it now: its exit ends the session
	_ = cmd.Wait()
}
