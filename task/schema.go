package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// jsonSchema reads a json_check schema, inline (a mapping) or from a file next to the task
// (a string), and compiles it so a bad schema is a validation error, not a grading one.
func (l *loader) jsonSchema(n *yaml.Node, what string, c *JSONCheckSpec) {
	rn := resolve(n)
	var doc any
	switch rn.Kind {
	case yaml.MappingNode:
		v, ok := l.value(rn)
		if !ok {
			return
		}
		doc = v
	case yaml.ScalarNode:
		p, data := l.readFile(rn, what)
		if p == "" {
			return
		}
		// A schema file is parsed and compiled once per task file: criteria repeated by an
		// alias would otherwise parse it once each (10^4 times 4 MiB).
		if l.schemaFiles == nil {
			l.schemaFiles = map[string]any{}
		}
		if done, seen := l.schemaFiles[p]; seen {
			if done != nil {
				c.SchemaFile, c.JSONSchema = p, done
			}
			return
		}
		l.schemaFiles[p] = nil // until it compiles
		var err error
		if strings.HasSuffix(p, ".json") {
			// The YAML node budget, counted the same way: 4 MiB of [1,1,...] took 180 MB.
			if bp := boundStructure(p, data); bp != nil {
				l.errorf(rn, "%s: schema file %s:%d:%d: %s", what, p, bp.Line, bp.Column, bp.Msg)
				return
			}
			doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(data))
		} else {
			var node *yaml.Node
			if node, err = readDoc(p, data, "schema"); err == nil { // the node budget applies here too
				sub := &decoder{file: p}
				doc, _ = sub.value(node.Content[0])
				if len(sub.problems) > 0 {
					err = errors.New(sub.problems[0].Msg)
				}
			}
		}
		if err != nil {
			l.errorf(rn, "%s: schema file %s does not parse: %v", what, p, err)
			return
		}
		c.SchemaFile = p
	default:
		l.errorf(rn, "%s must be a mapping (inline schema) or a file name, got %s", what, kindName(rn))
		return
	}
	normalized, err := normalizeJSON(doc)
	if err != nil {
		l.errorf(rn, "%s: %v", what, err)
		return
	}
	if _, err := CompileSchema(normalized); err != nil {
		l.errorf(rn, "%s: schema does not compile: %v", what, err)
		return
	}
	c.JSONSchema = normalized
	if c.SchemaFile != "" {
		l.schemaFiles[c.SchemaFile] = normalized
	}
}

// normalizeJSON round-trips a value through JSON so numbers have the types the schema
// library expects.
func normalizeJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON-compatible: %w", err)
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

// CompileSchema compiles a JSON Schema document. References to anything outside the
// document ($ref to files or URLs) are refused: a task's schema must not read the host.
func CompileSchema(doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	const loc = "ceval:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s; only references inside the schema are allowed", url)
}
