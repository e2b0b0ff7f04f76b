//go:build !toolboxlite

package cmds

func init() {
	for name, f := range liteCommands() {
		register(name, f)
	}
	for name, f := range map[string]Func{
		"tee": tee, "sed": sed, "awk": awk, "diff": diff, "cmp": cmp,
		"find": find, "ls": ls,
		"sha256sum": sha256sum, "md5sum": md5sum, "jq": jq, "xargs": xargs,
		"pwd": pwd, "env": env, "mkdir": mkdir, "rm": rm, "touch": touch,
	} {
		register(name, f)
	}
}
