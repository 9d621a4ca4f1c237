package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/version"
	"github.com/shardkeeper/shardkeeper/registry"
)

// registryFlags choose the registry the ShardingSphere way: a conf dir whose
// global.yaml has a `mode:` section, or the same props as flags.
type registryFlags struct {
	confDir        string
	repositoryType string
	serverLists    string
	namespace      string
	dataDir        string
	timeout        time.Duration
	showSecrets    bool
}

// shown is the value of kv as the CLI prints it: every secret masked
// (see package redact) unless --show-secrets.
func (f *registryFlags) shown(kv registry.KV) []byte {
	if f.showSecrets {
		return kv.Value
	}
	return redact.YAML(kv.Value)
}

// showSecretsUsage is the help of --show-secrets.
const showSecretsUsage = "print secrets (passwords, keys, tokens) instead of " + redact.Mask +
	"; only when reading the registry directly, which needs its own credentials"

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "shardkeeper",
		Short:         "Cluster mode for sharded databases: worker ids, membership and metadata on etcd or ZooKeeper",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what `shardkeeper version` prints.
		Version: version.Read().Release,
	}
	root.SetVersionTemplate(versionText(version.Read()))
	root.AddCommand(newServeCommand(), nounCommand(newRegistryCommand()), newHealthCommand(), newVersionCommand())
	addAdminCommands(root)
	return root
}

func (f *registryFlags) register(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.confDir, "conf", "", "conf dir whose global.yaml (or server.yaml) has the mode section")
	fl.StringVar(&f.repositoryType, "repository-type", "", "etcd, ZooKeeper or Embedded (overrides --conf)")
	fl.StringVar(&f.serverLists, "server-lists", "", "etcd URLs or ZooKeeper host:port, comma-separated")
	fl.StringVar(&f.namespace, "namespace", "", "registry namespace (default "+config.DefaultNamespace+")")
	fl.StringVar(&f.dataDir, "data-dir", "", "Embedded: the data directory (default "+config.DefaultEmbeddedDataDir+"); etcd: read the embedded registry's credentials there")
	fl.DurationVar(&f.timeout, "timeout", 0, "how long to wait for the registry (default 5s)")
}

// repository resolves the flags into a repository config: --conf first,
// then individual flags on top; with neither, the embedded default. ctx
// bounds reading the conf dir.
func (f *registryFlags) repository(ctx context.Context) (config.Repository, error) {
	mode := config.DefaultMode()
	if f.confDir != "" {
		m, err := config.LoadMode(ctx, f.confDir)
		if err != nil {
			return config.Repository{}, err
		}
		mode = m
	}
	return f.apply(mode.Repository)
}

// apply puts the individual flags on top of r.
func (f *registryFlags) apply(r config.Repository) (config.Repository, error) {
	if f.repositoryType != "" {
		props := map[string]string{"namespace": orDefault(f.namespace, config.DefaultNamespace)}
		if f.serverLists != "" {
			props["server-lists"] = f.serverLists
		}
		var err error
		if r, err = config.RepositoryFromFlags(f.repositoryType, props); err != nil {
			return config.Repository{}, err
		}
	} else if f.serverLists != "" {
		return config.Repository{}, fmt.Errorf("--server-lists needs --repository-type (etcd or ZooKeeper)")
	}
	if f.namespace != "" {
		r.Namespace = f.namespace
	}
	if f.dataDir != "" {
		r.DataDir = f.dataDir
	}
	if f.timeout > 0 {
		r.ConnectTimeout = f.timeout
	}
	return r, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
