// Command startup measures process start-up: each round runs every workload once, in a
// rotating order so that no workload always follows another, and prints per-workload medians
// and quartiles with ratios to the anchors. scripts/bench-startup.sh builds and runs it.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type workload struct {
	name  string
	argv  []string
	hello bool // time from exec to the first byte on stdout (the worker's hello), then close stdin
	times []time.Duration
	cpu   []time.Duration // user+system time of the process, to its exit
}

func main() {
	n := flag.Int("n", 40, "rounds")
	cevals := flag.String("ceval", "bin/ceval", "the ceval binary; several, comma-separated, are measured side by side")
	empty := flag.String("empty", "", "an empty Go program (anchor)")
	ctr := flag.String("ctr", "ctr", "ctr (anchor)")
	worker := flag.String("worker", "", "the WASM worker's argv, space-separated (default: CEVAL __wasm-worker)")
	flag.Parse()

	dir, err := os.MkdirTemp("", "ceval-startup")
	check(err)
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	check(os.Mkdir(ws, 0o755))
	check(os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644))
	taskFile := filepath.Join(dir, "static.yaml")
	check(os.WriteFile(taskFile, []byte("task_id: grade-static\ninitial_prompt: x\nsuccess_criteria:\n  - {type: file_exists, path: a.txt}\n"), 0o644))

	ws_ := []*workload{{name: "ctr --help", argv: []string{*ctr, "--help"}}}
	bins := strings.Split(*cevals, ",")
	for _, ceval := range bins {
		tag := ""
		if len(bins) > 1 {
			tag = " [" + filepath.Base(ceval) + "]"
		}
		wargv := []string{ceval, "__wasm-worker"}
		if *worker != "" {
			wargv = strings.Fields(*worker)
		}
		ws_ = append(ws_,
			&workload{name: "ceval --help" + tag, argv: []string{ceval, "--help"}},
			&workload{name: "ceval version" + tag, argv: []string{ceval, "version"}},
			&workload{name: "ceval grade (1 static criterion)" + tag, argv: []string{ceval, "grade", taskFile, "--workspace", ws}},
			&workload{name: "wasm worker exec-to-hello" + tag, argv: wargv, hello: true})
	}
	if *empty != "" {
		ws_ = append([]*workload{{name: "empty Go binary", argv: []string{*empty}}}, ws_...)
	}
	for _, w := range ws_ { // warm the page cache once
		_, _ = w.run()
	}
	for r := 0; r < *n; r++ {
		for i := range ws_ {
			w := ws_[(i+r)%len(ws_)]
			d, cpu := w.run()
			w.times, w.cpu = append(w.times, d), append(w.cpu, cpu)
		}
	}
	var emptyMed, ctrMed time.Duration
	fmt.Printf("%-50s %9s %9s %9s %8s %8s %9s\n", "workload", "median", "p25", "p75", "/empty", "/ctr", "cpu")
	for _, w := range ws_ {
		slices.Sort(w.times)
		slices.Sort(w.cpu)
		med := w.times[len(w.times)/2]
		switch w.name {
		case "empty Go binary":
			emptyMed = med
		case "ctr --help":
			ctrMed = med
		}
		ratio := func(a time.Duration) string {
			if a == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2fx", float64(med)/float64(a))
		}
		fmt.Printf("%-50s %9s %9s %9s %8s %8s %9s\n", w.name, ms(med), ms(w.times[len(w.times)/4]), ms(w.times[len(w.times)*3/4]), ratio(emptyMed), ratio(ctrMed), ms(w.cpu[len(w.cpu)/2]))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// run times one execution and returns its wall time and its CPU time (median CPU is less
// sensitive to other load on the machine than wall time). The worker is started as the Executor starts it: empty
// environment, "/" as its directory, from a thread with no_new_privs, and as uid 2000 when
// root.
func (w *workload) run() (time.Duration, time.Duration) {
	cmd := exec.Command(w.argv[0], w.argv[1:]...)
	if !w.hello {
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n%s", w.name, err, out)
			os.Exit(1)
		}
		return time.Since(t0), cpuTime(cmd)
	}
	cmd.Env, cmd.Dir = []string{}, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Getuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 2000, Gid: 2000, Groups: []uint32{}}
	}
	stdin, err := cmd.StdinPipe()
	check(err)
	stdout, err := cmd.StdoutPipe()
	check(err)
	done := make(chan struct{})
	defer close(done)
	started := make(chan time.Time)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread carries no_new_privs and dies
		check(unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		t0 := time.Now()
		check(cmd.Start())
		started <- t0
		<-done
	}()
	t0 := <-started
	var b [1]byte
	if _, err := io.ReadFull(stdout, b[:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: no hello: %v\n", w.name, err)
		os.Exit(1)
	}
	d := time.Since(t0)
	stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	return d, cpuTime(cmd)
}

func cpuTime(cmd *exec.Cmd) time.Duration {
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
