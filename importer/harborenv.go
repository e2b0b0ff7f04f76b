package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"ceval.dev/ceval/internal/lazyregexp"
	"ceval.dev/ceval/task"
)

// dockerfileFacts is what a Harbor import reads of environment/Dockerfile: the last
// absolute WORKDIR ("" when none or "/"), the last ENTRYPOINT as a shell command with its
// line, and the lines that set ENV.
type dockerfileFacts struct {
	workdir        string
	entrypoint     string
	entrypointArgv []string // the exec form's words, or the shell form's first word
	entrypointLine int
	envKeys        []string
	envLine        int
	copies         [][2]string // COPY/ADD from the build context: source, destination
}

// readDockerfile reads the facts above, one logical instruction per line (a line ending in
// "\" continues on the next).
func readDockerfile(df []byte) dockerfileFacts {
	var f dockerfileFacts
	sc := bufio.NewScanner(bytes.NewReader(df))
	sc.Buffer(make([]byte, 64<<10), maxInput)
	n, start := 0, 0
	var logical strings.Builder
	for sc.Scan() {
		n++
		line := sc.Text()
		if logical.Len() == 0 {
			start = n
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
		}
		if cont, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), `\`); ok {
			logical.WriteString(cont + " ")
			continue
		}
		logical.WriteString(line)
		instr, rest, _ := strings.Cut(strings.TrimSpace(logical.String()), " ")
		rest = strings.TrimSpace(rest)
		logical.Reset()
		switch strings.ToUpper(instr) {
		case "WORKDIR":
			if wd := strings.Trim(rest, `"`); strings.HasPrefix(wd, "/") {
				f.workdir = filepath.Clean(wd)
			}
		case "ENTRYPOINT":
			f.entrypoint, f.entrypointLine = shellForm(rest), start
			f.entrypointArgv = nil
			if strings.HasPrefix(rest, "[") {
				_ = json.Unmarshal([]byte(rest), &f.entrypointArgv)
			} else if w := strings.Fields(rest); len(w) > 0 {
				f.entrypointArgv = w[:1]
			}
		case "COPY", "ADD":
			if w := strings.Fields(rest); len(w) == 2 && !strings.HasPrefix(w[0], "--") {
				f.copies = append(f.copies, [2]string{w[0], w[1]})
			}
		case "ENV":
			f.envKeys = append(f.envKeys, envKeys(rest)...)
			if f.envLine == 0 {
				f.envLine = start
			}
		}
	}
	if f.workdir == "/" {
		f.workdir = ""
	}
	return f
}

// shellForm is an ENTRYPOINT as one shell command: the exec form's words quoted, the shell
// form as written.
func shellForm(arg string) string {
	var words []string
	if strings.HasPrefix(arg, "[") && json.Unmarshal([]byte(arg), &words) == nil {
		q := make([]string, len(words))
		for i, w := range words {
			q[i] = shellWord(w)
		}
		return strings.Join(q, " ")
	}
	return arg
}

// shellWord is s as one shell word: as it is when it holds no special character.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return s
	}
	return shellQuote(s)
}

var envKeyRE = lazyregexp.New(`(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=`)

// envKeys are the keys an ENV instruction sets (KEY=VALUE pairs, or the older "KEY VALUE").
func envKeys(arg string) []string {
	var keys []string
	for _, m := range envKeyRE.FindAllStringSubmatch(arg, -1) {
		keys = append(keys, m[1])
	}
	if len(keys) == 0 {
		if k, _, ok := strings.Cut(arg, " "); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// notOutputs are first path segments a Harbor test may name that are never the agent's
// outputs: Harbor's own mounts, ceval's, and the system's directories (the image's files).
var notOutputs = map[string]bool{
	"tests": true, "logs": true, "solution": true, "oracle": true, "workspace": true, "task": true,
	"usr": true, "bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true, "libx32": true, "etc": true,
	"opt": true, "proc": true, "sys": true, "dev": true, "run": true, "home": true, "root": true, "var": true,
	"boot": true, "nix": true, "snap": true, "installed-agent": true,
}

// absPathRE finds an absolute path where a test names one: at the start of a word, after a
// quote, '=', '(', ',' or '['; never inside a URL ("http://h/x") or a relative path.
var absPathRE = lazyregexp.New("(?:^|[\\s'\"`=(,\\[{])(/[A-Za-z0-9_][A-Za-z0-9_.-]*)(?:/|[\\s'\"`),;:\\]}]|$)")

// harborOutputs are the directories outside the workspace that a Harbor task's tests read
// (/output/result.txt, /tmp/answer.json): the first segment of each absolute path in tests/
// that is not below the WORKDIR (that is the workspace) and not in notOutputs, with the
// first FILE:LINE naming it, sorted.
func harborOutputs(dir, workdir string) ([]string, map[string]Problem, error) {
	where := map[string]Problem{}
	err := walkTextFiles(filepath.Join(dir, "tests"), func(p string, _ fs.FileMode, data []byte) error {
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range absPathRE.Regexp().FindAllStringSubmatchIndex(line, -1) {
				top := line[m[2]:m[3]]
				full := line[m[2]:]
				if end := strings.IndexAny(full, " \t'\"`),;]}"); end >= 0 {
					full = full[:end]
				}
				if notOutputs[top[1:]] || workdir != "" && (full == workdir || strings.HasPrefix(full, workdir+"/")) {
					continue // Harbor's, the system's, or the workspace's (rewritten to /workspace)
				}
				if _, seen := where[top]; !seen {
					where[top] = Problem{File: p, Line: i + 1, Field: "sandbox.outputs",
						Reason: fmt.Sprintf("the tests read %s, outside the WORKDIR: sandbox.outputs gets %s (a capped writable directory copied out after the agent, seen by the tests at the same path)", full, top)}
				}
			}
		}
		return nil
	})
	var outs []string
	for o := range where {
		if len(outs) < task.MaxOutputs {
			outs = append(outs, o)
		}
	}
	sort.Strings(outs)
	return outs, where, err
}

// entrypointScript finds the build-context file a Dockerfile COPYs to the ENTRYPOINT's
// program (COPY entrypoint.sh /entrypoint.sh; ENTRYPOINT ["/entrypoint.sh"]): its path
// below env (the build context), or "".
func entrypointScript(env string, f dockerfileFacts) string {
	if len(f.entrypointArgv) == 0 {
		return ""
	}
	prog := f.entrypointArgv[0]
	if (prog == "/bin/sh" || prog == "/bin/bash" || prog == "sh" || prog == "bash") && len(f.entrypointArgv) > 1 {
		prog = f.entrypointArgv[1]
	}
	for _, c := range f.copies {
		dst := c[1]
		if strings.HasSuffix(dst, "/") {
			dst += path.Base(c[0])
		}
		if dst == prog && !strings.Contains(c[0], "..") && !strings.HasPrefix(c[0], "/") {
			return filepath.Join(env, filepath.FromSlash(c[0]))
		}
	}
	return ""
}

var (
	// backgroundRE: a command left running (a trailing "&", nohup, a daemon or service manager).
	backgroundRE = lazyregexp.New(`(^|[^&])&\s*(#.*)?$|\bnohup\b|\b(service\s+\S+\s+start|systemctl\s+start|supervisord|dockerd|sshd)\b`)
	// systemWriteRE: a write to the image's own files (ceval's rootfs is read-only) or a
	// command that needs root (the steps run as the agent's user).
	systemWriteRE = lazyregexp.New(`>>?\s*/(etc|usr|var|opt|bin|sbin|lib|root|logs)(/|\s|$)|\b(apt-get|apt|apk|useradd|groupadd|chown|mount|sysctl|iptables)\b`)
)

// entrypointCannotRun says, with FILE:LINE and the line, why an ENTRYPOINT script cannot run
// as a ceval setup step: a process it leaves running (no services yet: it dies with the
// step's container) or a change of the image's system files or one that needs root.
func entrypointCannotRun(script string) []string {
	data, err := readCapped(script)
	if err != nil || bytes.IndexByte(data, 0) >= 0 {
		return nil
	}
	var why []string
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		switch {
		case backgroundRE.MatchString(t):
			why = append(why, fmt.Sprintf("%s:%d starts a process that keeps running (%s), which a step cannot keep: a server belongs in the task's services", script, i+1, t))
		case systemWriteRE.MatchString(t):
			why = append(why, fmt.Sprintf("%s:%d changes the image's system files or needs root (%s), and ceval's steps run as the agent's user over a read-only rootfs", script, i+1, t))
		}
		if len(why) == 5 {
			break
		}
	}
	return why
}
