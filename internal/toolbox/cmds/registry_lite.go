//go:build toolboxlite

package cmds

// The small toolbox registers only LiteNames' commands, so none of the others (awk, sed,
// jq and their packages) is linked into it.
func init() {
	for name, f := range liteCommands() {
		register(name, f)
	}
}
