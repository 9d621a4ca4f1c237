package dbconfig

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ClusterInfo is EXPORT METADATA's cluster_info, as upstream's
// ExportedClusterInfo serializes it to JSON: every database that has
// storage units as its exported YAML, the props as a `props:` YAML
// document, the global rules as a `rules:` YAML list.
type ClusterInfo struct {
	MetaData ClusterMetaData `json:"meta_data"`
}

// ClusterMetaData is upstream's ExportedMetaData.
type ClusterMetaData struct {
	Databases map[string]string `json:"databases"`
	Props     string            `json:"props"`
	Rules     string            `json:"rules"`
}

// ExportMetadata returns the JSON of snap's ClusterInfo (EXPORT METADATA
// writes it to a file as it is, and shows it Base64-encoded otherwise).
func ExportMetadata(snap *metadata.Snapshot) ([]byte, error) {
	info := ClusterInfo{MetaData: ClusterMetaData{Databases: map[string]string{}}}
	for _, name := range slices.Sorted(mapsKeys(snap.Databases)) {
		if len(snap.Databases[name].Units) == 0 {
			continue
		}
		y, err := Export(snap, name)
		if err != nil {
			return nil, err
		}
		info.MetaData.Databases[name] = string(y)
	}
	if len(snap.Props) > 0 {
		b, err := marshalOneLine(map[string]any{"props": snap.Props.Typed()})
		if err != nil {
			return nil, err
		}
		info.MetaData.Props = string(b)
	}
	if len(snap.GlobalRules) > 0 {
		var nodes []*yaml.Node
		for _, typ := range slices.Sorted(mapsKeys(snap.GlobalRules)) {
			var n yaml.Node
			if err := n.Encode(snap.GlobalRules[typ].Content); err != nil {
				return nil, fmt.Errorf("global rule %s: %w", typ, err)
			}
			quoteBreaks(&n)
			n.Tag = "!" + strings.ToUpper(typ)
			nodes = append(nodes, &n)
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: nodes}); err != nil {
			return nil, err
		}
		_ = enc.Close()
		info.MetaData.Rules = "rules:\n" + buf.String()
	}
	return json.Marshal(info)
}

// DecodeMetadata reads IMPORT METADATA's argument: Base64 of the JSON, as
// EXPORT METADATA shows it. Bad Base64 or JSON is a 30001 error.
func DecodeMetadata(b64 string) ([]byte, error) {
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, unsupported("the metadata is not Base64: %v", err)
	}
	return data, nil
}

// ImportMetadata imports the JSON of a ClusterInfo (EXPORT METADATA's
// output, decoded) all or nothing: every database is checked as Import
// checks it and the global rules and props are parsed before anything is
// written; then the databases, the global rules it names and the props
// (when it has any) are written in one registry transaction, or, when too
// big, in several whose last one holds the global rules and props, rolled
// back when one fails. It returns the databases imported.
func ImportMetadata(ctx context.Context, repo registry.Repository, data []byte, opts Options) ([]string, error) {
	var info ClusterInfo
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&info); err != nil {
		return nil, unsupported("the metadata is not an exported cluster_info: %v", err)
	}
	var names []string
	var plans []*plan
	for _, name := range slices.Sorted(mapsKeys(info.MetaData.Databases)) {
		p, err := prepare(ctx, repo, "database "+name, []byte(info.MetaData.Databases[name]), opts)
		if err != nil {
			return nil, err
		}
		if p.name != name {
			return nil, unsupported("database %q of the metadata names itself %q", name, p.name)
		}
		names = append(names, name)
		plans = append(plans, p)
	}
	global := info.MetaData.Props + "\n" + info.MetaData.Rules
	var props config.Props
	var rules []config.Rule
	if strings.TrimSpace(global) != "" {
		cfg, err := config.ParseGlobal("metadata props and rules", []byte(global))
		if err != nil {
			return nil, unsupported("invalid props or rules: %v", err)
		}
		rules = cfg.GlobalRules
		if strings.TrimSpace(info.MetaData.Props) != "" {
			props = cfg.Props
			if props == nil {
				props = config.Props{}
			}
		}
	}
	conds, ops, err := metadata.GlobalWrites(ctx, repo, rules, props)
	if err != nil {
		return nil, unsupported("%v", err)
	}
	if len(plans) == 0 && len(ops) == 0 {
		return nil, nil
	}
	if _, err := write(ctx, repo, plans, registry.Txn{Conds: conds, Ops: ops}, opts); err != nil {
		return nil, err
	}
	return names, nil
}
