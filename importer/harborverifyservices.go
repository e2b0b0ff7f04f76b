package importer

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// In Harbor the verifier runs in the task's main container, beside its compose services, so
// tests may query a service (curl http://api:8000/items, requests.get("http://api:8000"),
// socket.create_connection(("api", 8000))). ceval's verifier is a fresh container whose
// services are reachable only when its criterion names them (services: [NAME...]), so the
// import names each service the tests reach: a mapped service whose name appears in a file of
// tests/ as a host (//NAME, NAME:PORT, or a quoted "NAME"). A name only in a comment or in
// prose is not counted; naming one the tests never reach only keeps it running to the grade.

// harborTestServices returns, sorted, the names of svcs (the task's services: node) that the
// files of dir/tests reach, each with the FILE:LINE where it is first named.
func harborTestServices(dir string, svcs *yaml.Node) ([]string, []Problem) {
	if svcs == nil || svcs.Kind != yaml.SequenceNode {
		return nil, nil
	}
	var names []string
	for _, s := range svcs.Content {
		if n := get(s, "name"); n != nil && n.Value != "" {
			names = append(names, n.Value)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	pats := map[string]*regexp.Regexp{}
	for _, n := range names {
		q := regexp.QuoteMeta(n)
		pats[n] = regexp.MustCompile(`//` + q + `(?:[:/"'\s]|$)|(?:^|[^A-Za-z0-9._-])` + q + `:[0-9]|["']` + q + `["']`)
	}
	at := map[string]Problem{}
	_ = walkTextFiles(filepath.Join(dir, "tests"), func(p string, _ fs.FileMode, data []byte) error {
		for i, line := range strings.Split(string(data), "\n") {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "//") {
				continue
			}
			for _, n := range names {
				if _, seen := at[n]; !seen && pats[n].MatchString(line) {
					at[n] = Problem{File: p, Line: i + 1, Field: "services",
						Reason: fmt.Sprintf("the tests reach the compose service %s: the verifier criterion names it (services: [%s]), so it runs until the grade and the verifier reaches it by its name and ports, as Harbor's tests do from main", n, n)}
				}
			}
		}
		return nil
	})
	var reached []string
	var notes []Problem
	for n, p := range at {
		reached = append(reached, n)
		notes = append(notes, p)
	}
	sort.Strings(reached)
	sort.Slice(notes, func(i, j int) bool {
		if notes[i].File != notes[j].File {
			return notes[i].File < notes[j].File
		}
		return notes[i].Line < notes[j].Line
	})
	return reached, notes
}
