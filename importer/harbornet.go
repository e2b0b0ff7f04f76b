package importer

import (
	"fmt"
	"io/fs"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// A Harbor verifier and its compose services have the internet (and the host's API keys);
// ceval's have no network: the verifier only with the user's verifier_network: host, a service
// never, and neither reaches ceval's model gateway. harborReach reads the code each of them
// runs (tests/, and each built service's context) for calls to an internet host or a model
// provider, so a task that cannot run offline says why at the line that makes it so.

// harborReach returns, for the Harbor task in dir, each place its tests or its services reach an
// internet host or a model provider's API, unmapped at its FILE:LINE. testSkip holds lines of
// tests/test.sh already reported or rewritten (the Terminal-Bench preamble).
func harborReach(dir string, testSkip map[int]bool) []Problem {
	services, contexts, envKeys := composeReachInfo(dir)
	var problems []Problem
	hostsAt := hostsFileWriter(filepath.Join(dir, "environment"))
	scan := func(root, field string, service bool) {
		_ = walkTextFiles(root, func(p string, _ fs.FileMode, data []byte) error {
			if !reachCode(p, data) {
				return nil
			}
			var skip map[int]bool
			if p == filepath.Join(dir, "tests", "test.sh") {
				skip = testSkip
			}
			for _, pr := range reachProblems(p, field, service, data, services, skip) {
				if hostsAt != "" && !service && !strings.Contains(pr.Reason, "model provider") && !strings.Contains(pr.Reason, "API on the internet") {
					// dns-blacklisting: the image's ENTRYPOINT points the names at a server of its own
					pr.Reason += fmt.Sprintf("; the task's image maps host names in /etc/hosts (%s), perhaps these: ceval's verifier runs in a fresh container where that script never ran", hostsAt)
				}
				problems = append(problems, pr)
			}
			return nil
		})
	}
	scan(filepath.Join(dir, "tests"), "tests", false)
	names := make([]string, 0, len(contexts))
	for name := range contexts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		scan(contexts[name], "services."+name, true)
	}
	for _, k := range envKeys {
		reason := fmt.Sprintf("the service is given %s from the host, a model provider's key: %s", k.name, modelAdvice)
		if !modelKey.MatchString(k.name) {
			reason = fmt.Sprintf("the service is given %s from the host, the key of an API on the internet: a ceval service has no network and gets nothing from the host, so the calls it makes with it fail: serve what it reaches from within the service's image", k.name)
		}
		problems = append(problems, Problem{File: filepath.Join(dir, HarborComposeFile), Line: k.line, Field: k.field, Unmapped: true, Reason: reason})
	}
	return problems
}

// modelAdvice is what to do about code that calls a model provider.
const modelAdvice = "a real model is reached only through ceval's model gateway, which serves the agent and ceval's own judges, never a test or a service (they have no network and no provider key), so the call fails: grade with an llm_judge criterion (the judge model of ceval's config), play the user with the task's simulated_user, or have the service answer from canned replies"

type composeEnvKey struct {
	name, field string
	line        int
}

// composeReachInfo reads the compose file of dir: its service names (which a test or service
// reaches by name, not over the internet), the build context of each built service, and the
// *_API_KEY variables a service takes from the host.
func composeReachInfo(dir string) (map[string]bool, map[string]string, []composeEnvKey) {
	services := map[string]bool{"main": true}
	contexts := map[string]string{}
	var keys []composeEnvKey
	data, err := readCapped(filepath.Join(dir, HarborComposeFile))
	if err != nil {
		return services, contexts, nil
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return services, contexts, nil
	}
	svcs := get(doc.Content[0], "services")
	if svcs == nil || svcs.Kind != yaml.MappingNode {
		return services, contexts, nil
	}
	env := filepath.Join(dir, "environment")
	for i := 0; i+1 < len(svcs.Content); i += 2 {
		name, m := svcs.Content[i].Value, svcs.Content[i+1]
		services[name] = true
		if name == "main" || m.Kind != yaml.MappingNode {
			continue
		}
		if b := get(m, "build"); b != nil {
			ctx := filepath.Join(env, buildContext(b))
			// a context outside environment/ (../) is not the task's to read
			if rel, err := filepath.Rel(env, ctx); err == nil && !strings.HasPrefix(rel, "..") {
				contexts[name] = ctx
			}
		}
		e := get(m, "environment")
		if e == nil {
			continue
		}
		add := func(n *yaml.Node, k, v string) {
			if apiKeyName.MatchString(k) && (v == "" || strings.Contains(v, "${") || strings.HasPrefix(v, "$")) {
				keys = append(keys, composeEnvKey{name: k, field: "services." + name + ".environment", line: n.Line})
			}
		}
		switch e.Kind {
		case yaml.MappingNode:
			for j := 0; j+1 < len(e.Content); j += 2 {
				add(e.Content[j], e.Content[j].Value, e.Content[j+1].Value)
			}
		case yaml.SequenceNode:
			for _, it := range e.Content {
				k, v, _ := strings.Cut(it.Value, "=")
				add(it, k, v)
			}
		}
	}
	return services, contexts, keys
}

// reachCode says a file is code a test or service runs: a known source suffix or a #! line
// (data files, Dockerfiles (the build has the network) and documents are not).
func reachCode(p string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".go", ".pl", ".php":
		return true
	}
	return strings.HasPrefix(string(data), "#!")
}

var (
	// fetchCall is a call that opens a connection to a host: a shell tool or a client library.
	fetchCall = lazyregexp.New(`(?:^|[^\w.$-])(curl|wget|nc|ncat|telnet|ping|ssh|git\s+clone)(?:\b|\()|(?:^|[^\w$-])(requests\.\w+|httpx\.\w+|urlopen|urlretrieve|urllib3|aiohttp|HTTPS?Connection|create_connection|fetch|axios|http\.Get|http\.Post|net\.Dial|Net::HTTP|open-uri)(?:\b|\()|\.(connect)\(`)
	// urlRE is a URL's scheme and authority (host, perhaps {interpolated}, $variable, :port).
	urlRE = lazyregexp.New(`(?i)\b(?:https?|wss?|ftp)://([^\s"'\x60/?#),;\]\\]*)`)
	// hostRE is a whole word that is an internet host name (a top-level domain of a common
	// kind: file names such as data.txt or test_x.py are not).
	hostRE = lazyregexp.New(`^(?i)(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:com|net|org|io|dev|ai|edu|gov|info|co|uk|de|fr|jp|cn|ru|us|xyz|biz|cloud|tech|site|online|eu|ca|au|in|nl|br)(?::[0-9]+)?$`)
	// quoted is a single- or double-quoted string without quotes inside.
	quoted = lazyregexp.New(`"([^"\s]*)"|'([^'\s]*)'`)
	// modelImport imports a model provider's SDK (Python or JavaScript).
	modelImport = lazyregexp.New(`^\s*(?:import|from)\s+(anthropic|openai|litellm|langchain_anthropic|langchain_openai|mistralai|groq|cohere|google\.generativeai|google\.genai)\b|(?:require\(|from\s+)["'](openai|@anthropic-ai/sdk|@google/generative-ai|@mistralai/mistralai|groq-sdk)["']`)
	// modelHost is a model provider's API host.
	modelHost = lazyregexp.New(`(?i)\b(api\.anthropic\.com|api\.openai\.com|generativelanguage\.googleapis\.com|api\.mistral\.ai|api\.groq\.com|openrouter\.ai|api\.cohere\.(?:ai|com)|api\.together\.xyz|api\.deepseek\.com)\b`)
	// apiKeyRead reads a *_API_KEY variable from the environment (Python, JavaScript, shell, Go).
	apiKeyRead = lazyregexp.New(`(?:environ(?:\.get\(|\[)\s*|getenv\(\s*|process\.env\.|process\.env\[\s*|ENV\[\s*|Getenv\(\s*)["']?([A-Z0-9_]*_API_KEY)\b|\$\{?([A-Z0-9_]*_API_KEY)\b`)
	// baseURL sets an SDK's endpoint (base_url=, baseURL:, OPENAI_BASE_URL).
	baseURL    = lazyregexp.New(`(?i)base_?url`)
	apiKeyName = lazyregexp.New(`^[A-Z0-9_]*_API_KEY$`)
	// modelKey is the API key of a model provider (others are keys of some internet API).
	modelKey = lazyregexp.New(`^(ANTHROPIC|CLAUDE|OPENAI|AZURE_OPENAI|GEMINI|GOOGLE|MISTRAL|GROQ|COHERE|CO|OPENROUTER|DEEPSEEK|TOGETHER|XAI|FIREWORKS|PERPLEXITY|HF|HUGGINGFACE|LLM|MODEL)_API_KEY$`)
)

// reachProblems scans one file (field: tests or services.NAME) for calls to internet hosts
// and to model providers; services are the compose names a call may reach instead.
func reachProblems(file, field string, service bool, data []byte, services map[string]bool, skip map[int]bool) []Problem {
	lines := strings.Split(string(data), "\n")
	code := make([]string, len(lines))
	for i, l := range lines {
		code[i] = stripCodeComment(l)
	}
	var problems []Problem
	who, net := "", "ceval's verifier has no network unless the user's config says verifier_network: host, so it fails offline: serve what it reaches from a compose service (reached by its name) or from files in tests/, or run the suite with verifier_network: host"
	if service {
		who, net = "the service ", "a ceval service has no network (the user's verifier_network: host opens only the verifier's), so the call fails: serve what it reaches from within the service's image or from another service"
	}

	// (b) a model provider: one problem per file, at its first sign, naming each
	var model []string
	modelLine, modelLines := 0, map[int]bool{}
	keyLine, keyName := 0, "" // the first read of another service's key (DAYTONA_API_KEY)
	for i, l := range code {
		var what string
		switch m := modelImport.FindStringSubmatch(l); {
		case m != nil:
			what = "imports " + m[1] + m[2]
		case modelHost.MatchString(l):
			what = "calls " + modelHost.Regexp().FindString(l)
		default:
			if k := apiKeyRead.FindStringSubmatch(l); k != nil && modelKey.MatchString(k[1]+k[2]) {
				what = "reads " + k[1] + k[2]
			} else if k != nil && !skip[i+1] && keyLine == 0 {
				keyLine, keyName = i+1, k[1]+k[2]
			}
		}
		if what == "" || skip[i+1] {
			continue
		}
		modelLines[i+1] = true
		if modelLine == 0 {
			modelLine = i + 1
		}
		if len(model) < 4 {
			model = append(model, fmt.Sprintf("%s at line %d", what, i+1))
		}
	}
	// an SDK pointed at a local server (base_url="http://localhost:9100/v1": a mock) calls no provider
	for _, l := range code {
		if baseURL.MatchString(l) && localOnly(l, services) {
			modelLine = 0
		}
	}
	if modelLine > 0 {
		problems = append(problems, Problem{File: file, Line: modelLine, Field: field, Unmapped: true,
			Reason: fmt.Sprintf("%scalls a model provider's API (%s): %s", who, strings.Join(model, ", "), modelAdvice)})
	}

	if keyLine > 0 {
		problems = append(problems, Problem{File: file, Line: keyLine, Field: field, Unmapped: true,
			Reason: fmt.Sprintf("%sreads %s, the key of an API on the internet: %s", who, keyName, net)})
	}

	// (a) an internet host: each statement that fetches from one
	type named struct {
		host string
		line int
	}
	var fileHosts []named // quoted host names the file holds anywhere (for a fetch whose host is a variable)
	seen := map[string]bool{}
	for i, l := range code {
		for _, q := range quoted.FindAllStringSubmatch(l, -1) {
			h := hostOnly(q[1] + q[2])
			if !hostRE.MatchString(q[1]+q[2]) || !internetHost(h, services) {
				continue
			}
			if !seen[h] && !modelLines[i+1] {
				seen[h] = true
				fileHosts = append(fileHosts, named{h, i + 1})
			}
		}
	}
	for i := 0; i < len(code); {
		start, stmt, end := i, code[i], i+1
		depth := bracketDepth(code[i])
		for (depth > 0 || strings.HasSuffix(strings.TrimSpace(code[end-1]), "\\")) && end < len(code) && end-start < 40 {
			stmt += "\n" + code[end]
			depth += bracketDepth(code[end])
			end++
		}
		i = end
		m := fetchCall.FindStringSubmatch(stmt)
		if m == nil || skip[start+1] || modelLines[start+1] {
			continue
		}
		shell := strings.Contains(" curl wget nc ncat telnet ping ssh ", " "+m[1]+" ")
		hosts, dynamic := fetchHosts(stmt, shell, services)
		// the line of the statement that names the host (or the computed URL)
		at := start
		for j := start; j < end; j++ {
			if len(hosts) > 0 && strings.Contains(strings.ToLower(code[j]), hosts[0]) || dynamic != "" && strings.Contains(code[j], dynamic) {
				at = j
				break
			}
		}
		call := strings.TrimSpace(lines[at])
		if len(call) > 80 {
			call = call[:77] + "..."
		}
		switch {
		case len(hosts) > 0:
			problems = append(problems, Problem{File: file, Line: at + 1, Field: field, Unmapped: true,
				Reason: fmt.Sprintf("%sreaches the internet host %s (%s): %s", who, strings.Join(hosts, ", "), call, net)})
		case dynamic != "" && len(fileHosts) > 0:
			var given []string
			for _, h := range fileHosts[:min(len(fileHosts), 5)] {
				given = append(given, fmt.Sprintf("%s at line %d", h.host, h.line))
			}
			problems = append(problems, Problem{File: file, Line: at + 1, Field: field, Unmapped: true,
				Reason: fmt.Sprintf("%sfetches %s, a host given at run time, and this file names internet hosts (%s): %s", who, dynamic, strings.Join(given, ", "), net)})
		}
	}
	return problems
}

// fetchHosts is what a fetching statement reaches: the internet hosts it names literally (URLs,
// quoted host names, a shell tool's bare host argument), and a URL whose host is computed
// (http://{domain}, http://$HOST) when it names none.
func fetchHosts(stmt string, shell bool, services map[string]bool) ([]string, string) {
	hosts := literalHosts(stmt, services)
	if shell {
		for _, w := range strings.Fields(stmt) {
			w = strings.Trim(w, `"'`)
			if hostRE.MatchString(w) && internetHost(w, services) && !slices.Contains(hosts, hostOnly(w)) {
				hosts = append(hosts, hostOnly(w))
			}
		}
	}
	if len(hosts) > 0 {
		return hosts, ""
	}
	for _, m := range urlRE.Regexp().FindAllStringSubmatchIndex(stmt, -1) {
		auth := stmt[m[2]:m[3]]
		if auth == "" || strings.ContainsAny(auth, "{$%<") {
			return nil, strings.TrimRight(stmt[m[0]:m[1]], "/")
		}
	}
	return nil, ""
}

// literalHosts is the internet hosts a line names: literal URL hosts and quoted host names.
func literalHosts(s string, services map[string]bool) []string {
	var out []string
	add := func(h string) {
		// a provider's API host is reported as a model call, not as one more host
		if h != "" && internetHost(h, services) && !modelHost.MatchString(h) && !slices.Contains(out, hostOnly(h)) {
			out = append(out, hostOnly(h))
		}
	}
	for _, m := range urlRE.FindAllStringSubmatch(s, -1) {
		auth := m[1]
		if _, after, ok := strings.Cut(auth, "@"); ok {
			auth = after
		}
		if !strings.ContainsAny(auth, "{$%<") {
			add(auth)
		}
	}
	for _, m := range quoted.FindAllStringSubmatch(s, -1) {
		h := m[1] + m[2]
		if _, err := netip.ParseAddr(h); err == nil || hostRE.MatchString(h) {
			add(h)
		}
	}
	return out
}

// hostOnly drops a port (and an IPv6 literal's brackets).
func hostOnly(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.Index(h, "]"); i > 0 {
			return h[1:i]
		}
	}
	if i := strings.LastIndex(h, ":"); i >= 0 && strings.Count(h, ":") == 1 {
		h = h[:i]
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// internetHost says a host is on the internet: not loopback, a private or link-local address,
// a single-label name (a compose service, the container itself), a reserved name (.localhost,
// .test, .invalid, .local, .internal, .example) or a compose service.
func internetHost(h string, services map[string]bool) bool {
	h = hostOnly(h)
	if h == "" || services[h] {
		return false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return !(a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified())
	}
	if !strings.Contains(h, ".") {
		return false
	}
	for _, tld := range []string{".localhost", ".test", ".invalid", ".local", ".internal", ".example", ".lan", ".home.arpa"} {
		if strings.HasSuffix(h, tld) {
			return false
		}
	}
	return hostRE.MatchString(h) || strings.Count(h, ".") >= 1 && !strings.ContainsAny(h, "_")
}

// stripCodeComment drops a line's comment (# or // outside quotes, at its start or after a
// space) so a URL in a comment is never taken for a call.
func stripCodeComment(line string) string {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "//") {
		return ""
	}
	var q byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case q != 0:
			if c == '\\' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'' || c == '`':
			q = c
		case (c == '#' || c == '/' && i+1 < len(line) && line[i+1] == '/' && (i == 0 || line[i-1] != ':')) && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// bracketDepth is how many brackets a line opens and leaves open (quoted text aside).
func bracketDepth(line string) int {
	d := 0
	var q byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case q != 0:
			if c == '\\' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '(' || c == '[' || c == '{':
			d++
		case c == ')' || c == ']' || c == '}':
			d--
		}
	}
	return d
}

// localOnly says a shell line names URLs and every one is a compose service's or loopback's
// (curl http://api:8000/ready): it reaches nothing a network would give.
func localOnly(line string, services map[string]bool) bool {
	ms := urlRE.FindAllStringSubmatch(stripCodeComment(line), -1)
	for _, m := range ms {
		auth := m[1]
		if _, after, ok := strings.Cut(auth, "@"); ok {
			auth = after
		}
		if auth == "" || strings.ContainsAny(auth, "{$%<") || internetHost(auth, services) {
			return false
		}
	}
	return len(ms) > 0
}

// hostsWrite is a shell line that adds to /etc/hosts.
var hostsWrite = lazyregexp.New(`(>>?|tee( -a)?)\s*/etc/hosts\b`)

// hostsFileWriter is the FILE:LINE of the first line under env that writes /etc/hosts ("" if none).
func hostsFileWriter(env string) string {
	at := ""
	_ = walkTextFiles(env, func(p string, _ fs.FileMode, data []byte) error {
		for i, l := range strings.Split(string(data), "\n") {
			if at == "" && hostsWrite.MatchString(stripCodeComment(l)) {
				at = fmt.Sprintf("%s:%d", p, i+1)
			}
		}
		return nil
	})
	return at
}
