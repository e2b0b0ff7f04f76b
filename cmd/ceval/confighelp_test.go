package main

import (
	"reflect"
	"strings"
	"testing"
)

// The --config help names every setting the config file has, so a new one is not missed.
func TestConfigFlagHelpNamesEverySetting(t *testing.T) {
	usage := newRootCmd().PersistentFlags().Lookup("config").Usage
	ty := reflect.TypeFor[userConfig]()
	for i := range ty.NumField() {
		key, _, _ := strings.Cut(ty.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		if !strings.Contains(usage, key) {
			t.Errorf("--config help %q does not name %s", usage, key)
		}
	}
}
