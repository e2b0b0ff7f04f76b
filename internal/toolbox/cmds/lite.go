package cmds

// LiteNames are the commands of the small toolbox (cmd/ceval-toolbox-lite), sorted: the
// full toolbox's own functions, those that read their inputs and write only their
// standard streams. A script of only these, in the shape shell.LiteProgram accepts, runs
// there; anything else runs in the full toolbox.
var LiteNames = []string{
	"[", "basename", "cat", "cut", "dirname", "echo", "egrep", "false", "fgrep", "grep",
	"head", "printf", "seq", "sort", "tail", "test", "tr", "true", "uniq", "wc",
}

// liteCommands are the functions of LiteNames.
func liteCommands() map[string]Func {
	return map[string]Func{
		"cat": cat, "head": head, "tail": tail, "wc": wc,
		"echo": echo, "printf": printf, "seq": seq, "basename": basename, "dirname": dirname,
		"true": func(*Env, []string) int { return 0 }, "false": func(*Env, []string) int { return 1 },
		"grep": grep, "egrep": egrep, "fgrep": fgrep,
		"sort": sortCmd, "uniq": uniq, "cut": cut, "tr": tr,
		"test": test, "[": bracketCmd,
	}
}
