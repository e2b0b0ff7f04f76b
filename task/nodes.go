package task

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// MaxYAMLNodes is the node budget of one task or experiment file, and of each task merged
// from an experiment: the YAML nodes loading, merging and decoding can touch, every alias
// counted as a copy of what it names. It is far above any real task (a task with 200
// criteria is a few thousand nodes) and keeps the worst file to milliseconds and a few MB.
const MaxYAMLNodes = 50000

// yamlIndicators are the bytes that can introduce a YAML node; every node but a document's
// root follows one of them, and at most two nodes (a block mapping and its first key, or a
// key and its value) share one. Counting them bounds the nodes the parser would build before
// it builds any.
const yamlIndicators = "[{,:-?"

// boundStructure refuses data that could parse to more than about 2*MaxYAMLNodes nodes:
// the parser builds the whole tree (about 180 bytes a node) before anything can count it,
// so a file of 2 million one-character items would take 400 MB just to parse. The bound
// counts indicator bytes wherever they stand (in text too), so it never undercounts.
func boundStructure(name string, data []byte) *Problem {
	count, line, col := 0, 1, 1
	for _, b := range data {
		switch {
		case b == '\n':
			line, col = line+1, 0
		case b < 0x80 && isIndicator[b]:
			count++
			if count > MaxYAMLNodes {
				return &Problem{File: name, Line: line, Column: col, Msg: fmt.Sprintf(
					"too much YAML structure: more than %d of the characters %s by here, so the file could hold more than the %d nodes a file may; keep long text in a file of its own (initial_prompt_file)",
					MaxYAMLNodes, yamlIndicators, MaxYAMLNodes)}
			}
		}
		col++
	}
	return nil
}

var isIndicator = func() (t [0x80]bool) {
	for _, c := range yamlIndicators {
		t[c] = true
	}
	return t
}()

// nodeCounter counts a document's nodes with aliases expanded, in time and memory linear in
// the nodes actually parsed: each node's expanded size is computed once and remembered.
type nodeCounter struct {
	d     *decoder
	size  map[*yaml.Node]int // expanded size, capped at MaxYAMLNodes+1
	inner map[*yaml.Node]bool
	total int
}

// checkNodes reports, at the first alias (or node) that takes the document n past
// MaxYAMLNodes in document order, that it is over budget; and an alias to a node that
// contains it. It returns whether n is within budget. Everything that walks a document
// afterwards (merging, decoding) touches each counted node a bounded number of times.
func (d *decoder) checkNodes(n *yaml.Node) bool {
	c := &nodeCounter{d: d, size: map[*yaml.Node]int{}, inner: map[*yaml.Node]bool{}}
	return c.walk(n)
}

// walk counts n in document order, reporting where the total first passes the budget.
func (c *nodeCounter) walk(n *yaml.Node) bool {
	if n == nil {
		return true
	}
	if n.Kind == yaml.AliasNode {
		s, ok := c.expanded(n)
		if !ok {
			return false
		}
		c.total += s
		if c.total > MaxYAMLNodes {
			c.d.errorf(n, "this alias takes the file past %d YAML nodes (each alias counts as a copy of what it names); a task needs far fewer: write the values out, or share fewer levels", MaxYAMLNodes)
			return false
		}
		return true
	}
	c.total++
	if c.total > MaxYAMLNodes {
		c.d.errorf(n, "the file holds more than %d YAML nodes (aliases counted as copies)", MaxYAMLNodes)
		return false
	}
	for _, ch := range n.Content {
		if !c.walk(ch) {
			return false
		}
	}
	return true
}

// expanded returns the size of n with aliases expanded (capped just past the budget, so no
// sum overflows), remembering it for every node it visits. An alias inside the node it
// names is reported at the alias.
func (c *nodeCounter) expanded(n *yaml.Node) (int, bool) {
	target := n
	if n.Kind == yaml.AliasNode {
		target = n.Alias
		if target == nil {
			c.d.errorf(n, "this alias names no node")
			return 0, false
		}
		if c.inner[target] {
			c.d.errorf(n, "this alias stands inside the node it names: it would expand forever")
			return 0, false
		}
	}
	if s, ok := c.size[target]; ok {
		return s, true
	}
	c.inner[target] = true
	s := 1
	for _, ch := range target.Content {
		cs, ok := c.expanded(ch)
		if !ok {
			return 0, false
		}
		s = min(s+cs, MaxYAMLNodes+1)
	}
	delete(c.inner, target)
	c.size[target] = s
	return s, true
}

// yamlAnchorName matches the anchor names the YAML library quotes in its messages.
var yamlAnchorName = lazyregexp.New(`anchor '[^']*'`)

// contentFreeYAMLError drops the anchor names the YAML library quotes, so that a YAML
// error never shows text of the file (which may not be a task file at all).
func contentFreeYAMLError(msg string) string {
	return yamlAnchorName.ReplaceAllLiteralString(msg, "anchor")
}
