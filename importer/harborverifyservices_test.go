package importer

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The services a Harbor task's tests reach are those named as a host in a file of tests/
// (a URL, NAME:PORT, a quoted name): not in a comment, not in prose, not a longer name that
// contains it.
func TestHarborTestServicesAreTheHostsTheTestsName(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
	os.WriteFile(filepath.Join(dir, "tests", "test.sh"), []byte("#!/bin/bash\n# curl http://cache:6379 by hand\ncurl -fsS http://api:8000/items\necho the db is fine\nredis-cli -h kv-store-2 ping\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "tests", "test_x.py"), []byte("import socket\nsocket.create_connection((\"kv\", 7000))\n# db:5432\nURL = 'postgres://user@db:5432/x'\n"), 0o644)
	var svcs yaml.Node
	if err := yaml.Unmarshal([]byte("- {name: api}\n- {name: kv}\n- {name: db}\n- {name: cache}\n- {name: unused}\n- {name: kv-store}\n"), &svcs); err != nil {
		t.Fatal(err)
	}
	got, notes := harborTestServices(dir, svcs.Content[0])
	if want := []string{"api", "db", "kv"}; !reflect.DeepEqual(got, want) {
		t.Errorf("services %v, want %v", got, want)
	}
	if len(notes) != 3 || filepath.Base(notes[0].File) != "test.sh" || notes[0].Line != 3 {
		t.Errorf("notes %+v: want one per service, api's at test.sh:3", notes)
	}
}
