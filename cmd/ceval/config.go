package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// userConfig is ceval's config file: what the user (never a task) permits by default.
//
//	allow_env: [ANTHROPIC_API_KEY]   # host variables tasks may pass to agents
//	allow_host_network: false        # let tasks that ask for network: host have it
type userConfig struct {
	AllowEnv         []string `yaml:"allow_env"`
	AllowHostNetwork bool     `yaml:"allow_host_network"`
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
	return cfg, nil
}
