package main

import (
	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/oci"
)

// configSchema is the JSON Schema (draft 2020-12) of ceval's config file (ceval schema
// config); TestConfigSchemaNamesExactlyTheLoadersFields holds it to userConfig's fields.
func configSchema() map[string]any {
	obj := func(desc string, props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "properties": props, "additionalProperties": false, "description": desc}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	typ := func(t, desc string) map[string]any { return map[string]any{"type": t, "description": desc} }
	strs := func(desc string) map[string]any {
		return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
	}
	strsByName := func(desc string) map[string]any {
		return map[string]any{"type": "object", "additionalProperties": strs(""), "description": desc}
	}
	rate := func(desc string) map[string]any {
		return map[string]any{"type": "number", "minimum": 0, "description": desc}
	}
	price := obj("USD per million tokens for one model; a cache rate left out costs what input costs", map[string]any{
		"input_per_mtok":          rate("input tokens"),
		"cached_input_per_mtok":   rate("input tokens read from the cache"),
		"cache_creation_per_mtok": rate("input tokens written to the cache"),
		"output_per_mtok":         rate("output tokens"),
	}, "input_per_mtok", "output_per_mtok")
	allow := obj("what the gateway forwards for one API; each list given replaces the default's", map[string]any{
		"headers":       strs("request headers forwarded"),
		"header_values": strsByName("header -> the values forwarded"),
		"fields":        strs("top-level body fields forwarded"),
		"values":        strsByName("body field -> the values forwarded"),
	})
	return map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                "ceval config file",
		"type":                 "object",
		"additionalProperties": false,
		"properties": map[string]any{
			"allow_env":           strs("host variables tasks may pass to their agents"),
			"allow_host_network":  typ("boolean", "let tasks that ask for sandbox.network: host have it"),
			"verifier_network":    map[string]any{"type": "string", "enum": []string{"none", "host"}, "description": "the network of every sandbox: container criterion: none (the default: each criterion's own) or host, for suites whose tests install their tools at test time (apt-get, uv); shown in result.json's verifier"},
			"allow_rlimit_limits": typ("boolean", "on a rootless daemon without a delegated cgroup subtree, enforce pids by RLIMIT_NPROC and memory by RLIMIT_AS (per process) instead of refusing the run; cpu is then not enforced"),
			"prices":              map[string]any{"type": "object", "additionalProperties": price, "description": "model -> its price (run_limits.max_usd and judge.max_usd_per_run need it)"},
			"gateway_allow":       map[string]any{"type": "object", "propertyNames": map[string]any{"enum": []string{transcript.Anthropic, transcript.OpenAI}}, "additionalProperties": allow, "description": "per API: what the model gateway forwards"},
			"pull":                map[string]any{"type": "string", "enum": []string{"missing", "always", "never"}, "description": "when runs pull the registry images tasks name: missing (the default: only what containerd lacks), always (ask the registry what a tag names when an experiment pins it), never"},
			"hosts_dir":           typ("string", "containerd's hosts directory for registries: HOST/hosts.toml, HOST/ca.crt (default /etc/containerd/certs.d)"),
			"docker_config":       typ("string", "Docker config file with registry credentials, auths entries (default $DOCKER_CONFIG/config.json, else ~/.docker/config.json)"),
			"backend":             map[string]any{"type": "string", "enum": []string{backendLocal, backendKubernetes}, "description": "where runs go: local (containerd on this machine, the default) or kubernetes (a Pod per run; see kubernetes)"},
			"kubernetes": obj("the cluster of backend: kubernetes", map[string]any{
				"kubeconfig":                       typ("string", "kubeconfig file (default: $CEVAL_KUBECONFIG, $KUBECONFIG, ~/.kube/config)"),
				"namespace":                        map[string]any{"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63, "description": "the runs' namespace (default: default)"},
				"init_image":                       typ("string", "the image holding ceval's init (default: ceval images build-init's name)"),
				"image_pull_policy":                map[string]any{"type": "string", "enum": []string{"Never", "IfNotPresent", "Always"}, "description": "Never (the default without registry or images) for images imported into the nodes; IfNotPresent (the default with them) or Always for a registry"},
				"image_pull_secrets":               map[string]any{"type": "array", "items": map[string]any{"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", "maxLength": 253}, "description": "names of dockerconfigjson Secrets in namespace the nodes pull the images with (a private registry)"},
				"runtime_class":                    typ("string", "a sandboxed runtime class the cluster offers (gVisor, Kata)"),
				"user_namespaces":                  map[string]any{"type": "string", "enum": []string{"auto", "true", "false"}, "description": "hostUsers: false when every node supports it (auto, the default), always, or never"},
				"accept_unenforced_network_policy": typ("boolean", "run even when a Pod reaches the API server or a kubelet before its agent starts (the cluster does not enforce NetworkPolicies)"),
				"registry":                         typ("string", "a repository prefix the nodes pull from (HOST[:PORT]/PATH): ceval.local/NAME:TAG is pushed there as PREFIX/NAME:TAG by ceval images push --kubernetes and named by digest in the Pods"),
				"images":                           map[string]any{"type": "object", "propertyNames": map[string]any{"pattern": "^(ceval\\.local/|ceval\\.dev/ceval-init:)"}, "additionalProperties": map[string]any{"type": "string"}, "description": "ceval.local image (or the init image) -> the registry reference it is pushed to and pulled from (before registry)"},
			}),
			"id_range": obj("host IDs of the runs' user namespaces: 65536 per live run", map[string]any{
				"start": map[string]any{"type": "integer", "minimum": oci.IDRangeSize, "maximum": 1<<32 - 2, "description": "the first host ID"},
				"slots": map[string]any{"type": "integer", "minimum": 1, "description": "runs at once"},
			}, "start", "slots"),
			"judge": obj("the model llm_judge asks, from the host; its key comes from ceval's environment", map[string]any{
				"api":               map[string]any{"type": "string", "enum": []string{judge.Anthropic, judge.OpenAI}},
				"model":             typ("string", "the judge model's name"),
				"base_url":          typ("string", "optional: the API's base URL"),
				"key_env":           map[string]any{"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "description": "the variable holding the key (default ANTHROPIC_API_KEY or OPENAI_API_KEY by api)"},
				"timeout":           map[string]any{"type": "string", "pattern": `^[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h)([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))*$`, "description": "per call, e.g. 60s"},
				"max_calls_per_run": map[string]any{"type": "integer", "minimum": 0, "description": "retries included"},
				"max_usd_per_run":   map[string]any{"type": "number", "minimum": 0, "description": "priced from prices.<model>; 0: no limit"},
			}, "api", "model"),
		},
	}
}
