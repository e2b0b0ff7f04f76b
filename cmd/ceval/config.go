package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/sandbox"
)

// userConfig is ceval's config file: what the user (never a task) permits by default.
//
//	allow_env: [ANTHROPIC_API_KEY]   # host variables tasks may pass to agents
//	allow_host_network: false        # let tasks that ask for network: host have it
//	verifier_network: none           # or host: every sandbox: container criterion on the host's network (tests that install tools)
//	prices:                          # USD per million tokens, by model; run_limits.max_usd needs the task's model here
//	  claude-sonnet-4-5: {input_per_mtok: 3, cached_input_per_mtok: 0.3, cache_creation_per_mtok: 3.75, output_per_mtok: 15}
//	gateway_allow:                   # what the model gateway forwards, per API (anthropic, openai); each list given replaces the default's
//	  anthropic:
//	    header_values: {anthropic-beta: [claude-code-20250219, ...]}
//	    values: {service_tier: [standard_only, auto]}
//	id_range: {start: 2147483648, slots: 1024}  # host IDs of the runs' user namespaces: 65536 per live run
//	judge:                           # the model llm_judge asks, from the host; its key from ceval's environment
//	  api: anthropic                 # or openai
//	  model: claude-sonnet-4-5
//	  base_url: https://proxy.example # optional
//	  key_env: ANTHROPIC_API_KEY      # default: ANTHROPIC_API_KEY or OPENAI_API_KEY by api
//	  timeout: 60s                    # per call
//	  max_calls_per_run: 20           # retries included
//	  max_usd_per_run: 1              # priced from prices.<model>; 0: no limit
//	allow_rlimit_limits: false       # rootless, no cgroup subtree delegated: pids by RLIMIT_NPROC, memory by RLIMIT_AS per process, cpu not limited
//	backend: local                   # or kubernetes: each run a Pod of the cluster below (ceval run --backend)
//	kubernetes:
//	  kubeconfig: /home/me/.kube/config  # default: $CEVAL_KUBECONFIG, $KUBECONFIG, ~/.kube/config
//	  namespace: ceval-runs               # default: default
//	  init_image: registry.example/ceval-init:TAG  # default: ceval images build-init's name, imported into the nodes
//	  image_pull_policy: IfNotPresent     # Never for images imported into the nodes (default), Always, IfNotPresent
//	  runtime_class: gvisor               # a sandboxed runtime the cluster offers
//	  user_namespaces: auto               # hostUsers: false when every node supports it (auto), always (true) or never (false)
//	  accept_unenforced_network_policy: false  # run even when a Pod reaches the API server or a kubelet
//	pull: missing                    # when runs pull the registry images tasks name: missing (default), always, never
//	hosts_dir: /etc/containerd/certs.d   # containerd's hosts directory: HOST/hosts.toml, HOST/ca.crt
//	docker_config: /home/me/.docker/config.json  # registry credentials (default $DOCKER_CONFIG/config.json, ~/.docker/config.json)
type userConfig struct {
	AllowEnv         []string               `yaml:"allow_env"`
	AllowHostNetwork bool                   `yaml:"allow_host_network"`
	Prices           map[string]priceConfig `yaml:"prices"`
	GatewayAllow     map[string]allowConfig `yaml:"gateway_allow"`
	IDRange          *sandbox.IDRange       `yaml:"id_range"`
	Judge            *judgeConfig           `yaml:"judge"`
	// VerifierNetwork is the network of every verifier container: none (each criterion's
	// own) or host, for suites whose tests install their tools at test time.
	VerifierNetwork string `yaml:"verifier_network"`
	// AllowRlimitLimits lets rootless runs without a delegated cgroup subtree hold their
	// limits by rlimits (see --allow-rlimit-limits); never a task's to set.
	AllowRlimitLimits bool `yaml:"allow_rlimit_limits"`
	// Backend is where runs go: local (containerd on this machine) or kubernetes.
	Backend    string      `yaml:"backend"`
	Kubernetes *kubeConfig `yaml:"kubernetes"`
	// Pull, HostsDir and DockerConfig are how runs and images pull/push reach registries.
	Pull         string `yaml:"pull"`
	HostsDir     string `yaml:"hosts_dir"`
	DockerConfig string `yaml:"docker_config"`

	// prices is Prices checked, with the defaults filled in.
	prices map[string]gateway.Price
	// gatewayAllow is GatewayAllow checked.
	gatewayAllow map[string]gateway.Allowlist
	// judge is Judge checked, with its key from the environment; nil when none.
	judge *judge.Judge
}

// judgeConfig is the judge section: the model llm_judge criteria ask.
type judgeConfig struct {
	API            string        `yaml:"api"`
	Model          string        `yaml:"model"`
	BaseURL        string        `yaml:"base_url"`
	KeyEnv         string        `yaml:"key_env"`
	Timeout        time.Duration `yaml:"timeout"`
	MaxCallsPerRun int           `yaml:"max_calls_per_run"`
	MaxUSDPerRun   float64       `yaml:"max_usd_per_run"`
}

// judgeFrom checks the judge section and takes the key from the environment (never from a
// task); a missing key is reported when a judge call needs it.
func judgeFrom(jc *judgeConfig, prices map[string]gateway.Price, getenv func(string) string) (*judge.Judge, error) {
	if jc == nil {
		return nil, nil
	}
	keyEnv := map[string]string{judge.Anthropic: "ANTHROPIC_API_KEY", judge.OpenAI: "OPENAI_API_KEY"}[jc.API]
	switch {
	case keyEnv == "":
		return nil, fmt.Errorf("judge.api %q: give anthropic or openai", jc.API)
	case jc.Model == "":
		return nil, errors.New("judge.model is required (the judge model's name)")
	case jc.Timeout < 0 || jc.MaxCallsPerRun < 0 || jc.MaxUSDPerRun < 0:
		return nil, errors.New("judge: timeout, max_calls_per_run and max_usd_per_run must not be negative")
	}
	if jc.KeyEnv != "" {
		keyEnv = jc.KeyEnv
	}
	cfg := judge.Config{API: jc.API, Model: jc.Model, BaseURL: jc.BaseURL, Key: getenv(keyEnv), KeyEnv: keyEnv,
		Timeout: jc.Timeout, MaxCalls: jc.MaxCallsPerRun, MaxUSD: jc.MaxUSDPerRun}
	if p, ok := prices[jc.Model]; ok {
		cfg.InputPerMTok, cfg.OutputPerMTok = p.Input, p.Output
	} else if jc.MaxUSDPerRun > 0 {
		return nil, fmt.Errorf("judge.max_usd_per_run needs a price for %q: add prices.%s", jc.Model, jc.Model)
	}
	return judge.New(cfg, nil, nil), nil
}

// allowConfig is one API's entry under gateway_allow (see gateway.Allowlist); a list left
// out keeps the default (gateway.DefaultAllowlist).
type allowConfig struct {
	Headers      []string            `yaml:"headers"`
	HeaderValues map[string][]string `yaml:"header_values"`
	Fields       []string            `yaml:"fields"`
	Values       map[string][]string `yaml:"values"`
}

// priceConfig is one model's entry under prices. input_per_mtok and output_per_mtok are
// required; a cache rate left out costs what plain input costs.
type priceConfig struct {
	Input         *float64 `yaml:"input_per_mtok"`
	CachedInput   *float64 `yaml:"cached_input_per_mtok"`
	CacheCreation *float64 `yaml:"cache_creation_per_mtok"`
	Output        *float64 `yaml:"output_per_mtok"`
}

// gatewayPrices checks the prices table and fills in the cache rates left out.
func gatewayPrices(in map[string]priceConfig) (map[string]gateway.Price, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]gateway.Price, len(in))
	for model, pc := range in {
		if model == "" {
			return nil, errors.New("prices: a model name is empty")
		}
		if pc.Input == nil || pc.Output == nil {
			return nil, fmt.Errorf("prices.%s: give input_per_mtok and output_per_mtok (USD per million tokens)", model)
		}
		p := gateway.Price{Input: *pc.Input, CachedInput: *pc.Input, CacheCreation: *pc.Input, Output: *pc.Output}
		if pc.CachedInput != nil {
			p.CachedInput = *pc.CachedInput
		}
		if pc.CacheCreation != nil {
			p.CacheCreation = *pc.CacheCreation
		}
		if err := p.Check(); err != nil {
			return nil, fmt.Errorf("prices.%s: %w", model, err)
		}
		out[model] = p
	}
	return out, nil
}

// defaultConfigPath is $XDG_CONFIG_HOME/ceval/config.yaml (~/.config/ceval/config.yaml).
func defaultConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "ceval", "config.yaml")
}

// loadUserConfig reads the config file; a missing file at the default path is an empty
// config, a missing file the user named is an error. Unknown fields are errors.
func loadUserConfig(path string, explicit bool) (userConfig, error) {
	var cfg userConfig
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("config file %s: %w", path, err)
	}
	if cfg.prices, err = gatewayPrices(cfg.Prices); err != nil {
		return cfg, fmt.Errorf("config file %s: %w", path, err)
	}
	if cfg.judge, err = judgeFrom(cfg.Judge, cfg.prices, os.Getenv); err != nil {
		return cfg, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(cfg.GatewayAllow) > 0 {
		cfg.gatewayAllow = map[string]gateway.Allowlist{}
		for api, a := range cfg.GatewayAllow {
			cfg.gatewayAllow[api] = gateway.Allowlist{Headers: a.Headers, HeaderValues: a.HeaderValues, Fields: a.Fields, Values: a.Values}
		}
		if err := gateway.CheckAllowlists(cfg.gatewayAllow); err != nil {
			return cfg, fmt.Errorf("config file %s: gateway_allow: %w", path, err)
		}
	}
	if cfg.IDRange != nil {
		if err := cfg.IDRange.Check(); err != nil {
			return cfg, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	switch cfg.VerifierNetwork {
	case "", policy.NetworkNone, policy.NetworkHost:
	default:
		return cfg, fmt.Errorf("config file %s: verifier_network %q: want none (the default) or host", path, cfg.VerifierNetwork)
	}
	if err := checkBackendConfig(cfg.Backend, cfg.Kubernetes); err != nil {
		return cfg, fmt.Errorf("config file %s: %w", path, err)
	}
	if _, err := images.ParsePullPolicy(cfg.Pull); err != nil {
		return cfg, fmt.Errorf("config file %s: pull: %w", path, err)
	}
	return cfg, nil
}

// idRange is the configured id_range, or the zero value (the default range).
func (c userConfig) idRange() sandbox.IDRange {
	if c.IDRange == nil {
		return sandbox.IDRange{}
	}
	return *c.IDRange
}
