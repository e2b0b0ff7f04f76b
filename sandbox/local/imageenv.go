package local

import "ceval.dev/ceval/sandbox"

// The image ENV rules are package sandbox's (every backend applies them); these are their
// names here.

func imageEnv(env []string, workdir string) (kept, dropped []string) {
	return sandbox.ImageEnv(env, workdir)
}

func mergeImageEnv(image, own []string) []string { return sandbox.MergeImageEnv(image, own) }

func prependImageEnv(image, pre []string) []string { return sandbox.PrependImageEnv(image, pre) }
