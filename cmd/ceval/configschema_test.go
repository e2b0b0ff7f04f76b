package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// configMappings are the config file's mappings: where each sits in a YAML document (the
// probe goes at ZZ), and where in the schema.
var configMappings = []struct {
	doc    string
	schema []string // "*" is a map's value
}{
	{"ZZ", nil},
	{"prices:\n  m:\n    ZZ", []string{"prices", "*"}},
	{"gateway_allow:\n  anthropic:\n    ZZ", []string{"gateway_allow", "*"}},
	{"id_range:\n  ZZ", []string{"id_range"}},
	{"judge:\n  ZZ", []string{"judge"}},
	{"kubernetes:\n  ZZ", []string{"kubernetes"}},
}

func configSchemaAt(t *testing.T, path []string) map[string]any {
	t.Helper()
	s := configSchema()
	for _, p := range path {
		if p == "*" {
			s = s["additionalProperties"].(map[string]any)
		} else {
			s = s["properties"].(map[string]any)[p].(map[string]any)
		}
	}
	return s
}

// TestConfigSchemaNamesExactlyTheLoadersFields holds the schema's properties at every
// mapping to the fields the loader decodes there: each schema name is one the loader
// accepts, the probe zz_probe is refused, and the decoded struct has no field the schema
// lacks. A field added to userConfig (or a section of it) and not to the schema fails here.
func TestConfigSchemaNamesExactlyTheLoadersFields(t *testing.T) {
	dir := t.TempDir()
	load := func(doc string) error {
		p := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadUserConfig(p, true)
		return err
	}
	// the loader's own fields, from the struct it decodes into with KnownFields
	decoded := map[string][]string{}
	var walk func(key string, ty reflect.Type)
	walk = func(key string, ty reflect.Type) {
		for ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		switch ty.Kind() {
		case reflect.Map:
			walk(key+".*", ty.Elem())
		case reflect.Struct:
			var names []string
			for i := range ty.NumField() {
				f := ty.Field(i)
				if !f.IsExported() {
					continue
				}
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if name == "" || name == "-" {
					t.Fatalf("%s.%s: every decoded field needs a yaml name", key, f.Name)
				}
				names = append(names, name)
				walk(key+"."+name, f.Type)
			}
			sort.Strings(names)
			decoded[key] = names
		}
	}
	walk("", reflect.TypeOf(userConfig{}))
	if len(decoded) != len(configMappings) {
		t.Errorf("the loader decodes %d mappings, the test probes %d: add the new one to configMappings (%v)", len(decoded), len(configMappings), decoded)
	}
	for _, m := range configMappings {
		key := ""
		for _, p := range m.schema {
			key += "." + p
		}
		s := configSchemaAt(t, m.schema)
		var names []string
		for name := range s["properties"].(map[string]any) {
			names = append(names, name)
		}
		sort.Strings(names)
		if !slices.Equal(names, decoded[key]) {
			t.Errorf("%q: the schema has %v, the loader decodes %v", key, names, decoded[key])
		}
		if s["additionalProperties"] != false {
			t.Errorf("%q: the schema allows other names; the loader refuses them", key)
		}
		if err := load(strings.Replace(m.doc, "ZZ", "zz_probe: 1", 1) + "\n"); err == nil || !strings.Contains(err.Error(), "field zz_probe not found") {
			t.Errorf("%q: the loader took zz_probe: %v", key, err)
		}
		for _, name := range names {
			if err := load(strings.Replace(m.doc, "ZZ", name+": null", 1) + "\n"); err != nil && strings.Contains(err.Error(), "not found") {
				t.Errorf("%q: the schema names %s, the loader refuses it: %v", key, name, err)
			}
		}
	}
}

// TestConfigSchemaAcceptsAFullConfigAndRefusesMisspellings compiles the schema, checks a
// config that sets every section (and loads) against it, and a misspelled one.
func TestConfigSchemaAcceptsAFullConfigAndRefusesMisspellings(t *testing.T) {
	raw, err := json.Marshal(configSchema())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("config.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("config.json")
	if err != nil {
		t.Fatal(err)
	}
	full := `{"allow_env": ["ANTHROPIC_API_KEY"], "allow_host_network": false,
		"prices": {"claude-sonnet-4-5": {"input_per_mtok": 3, "cached_input_per_mtok": 0.3, "cache_creation_per_mtok": 3.75, "output_per_mtok": 15}},
		"gateway_allow": {"anthropic": {"header_values": {"anthropic-beta": ["claude-code-20250219"]}, "values": {"service_tier": ["auto"]}}},
		"judge": {"api": "anthropic", "model": "claude-sonnet-4-5", "key_env": "K", "timeout": "60s", "max_calls_per_run": 20, "max_usd_per_run": 1}}`
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(full), 0o600); err != nil { // JSON is YAML
		t.Fatal(err)
	}
	if _, err := loadUserConfig(p, true); err != nil {
		t.Fatalf("the loader refuses the full config: %v", err)
	}
	var v any
	if err := json.Unmarshal([]byte(full), &v); err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("the schema refuses the full config: %v", err)
	}
	for _, bad := range []string{
		`{"allow_envs": ["X"]}`,
		`{"prices": {"m": {"input_per_mtok": 1}}}`,
		`{"judge": {"api": "gemini", "model": "m"}}`,
		`{"gateway_allow": {"gemini": {}}}`,
		`{"id_range": {"start": 0, "slots": 1}}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
