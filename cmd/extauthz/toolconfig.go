package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// quickStartConfig is README's quick-start configuration, relative to the
// repository root; token falls back to it when given nothing else.
const quickStartConfig = "examples/config.yaml"

// configFlagUsage is the --config flag of the check, token and approve tools.
const configFlagUsage = "serve's config file (default $EXTAUTHZ_CONFIG), read as serve reads it: flags not given default to its values"

// toolConfig returns serve's configuration for the check, token and approve
// tools, read as serve reads it (EXTAUTHZ_* variables over the file, paths
// relative to it, every key checked), from file or else $EXTAUTHZ_CONFIG;
// nil when neither names a file. It also returns the file's name. A config
// serve would refuse is an error.
func toolConfig(file string, getenv func(string) string) (*Config, string, error) {
	if file == "" {
		file = getenv("EXTAUTHZ_CONFIG")
	}
	if file == "" {
		return nil, "", nil
	}
	c, err := parseServeConfig([]string{"--config", file}, getenv, io.Discard)
	if err != nil {
		return nil, file, fmt.Errorf("--config %s: %w", file, err)
	}
	return c, file, nil
}

// setFlags returns the names of the flags given on fs's command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// defaultKey is the key file a tool signs with when --key is not given:
// def (relative to the working directory, as README's commands run from
// the repository root) when it exists there, else the file of that name
// beside configFile (the quick start's test keys sit beside
// examples/config.yaml), else def (whose error then names it).
func defaultKey(def, configFile string) string {
	if _, err := os.Stat(def); err == nil || configFile == "" {
		return def
	}
	if alt := filepath.Join(filepath.Dir(configFile), filepath.Base(def)); alt != def {
		if _, err := os.Stat(alt); err == nil {
			return alt
		}
	}
	return def
}
