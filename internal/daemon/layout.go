package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// pickLayout settles the layout the node writes before it writes
// anything: c.Repository.Layout when layoutVersion is set, refused (a
// *metadata.LayoutMismatchError) when a registered ShardingSphere node
// loads another layout, unless c.AllowLayoutMismatch; otherwise
// metadata.ChooseLayout of the registry's tree and its registered nodes.
// It returns c with the layout set (in c.Conf's mode too, which the
// bootstrap writes with), the choice, and the tree's layouts. It logs
// the choice, and warns for each registered node that cannot load
// everything the node may write.
func pickLayout(ctx context.Context, repo registry.Repository, c Config, log *slog.Logger) (Config, metadata.LayoutChoice, []paths.Layout, error) {
	readers, err := metadata.LoadReaders(ctx, repo)
	if err != nil {
		return c, metadata.LayoutChoice{}, nil, err
	}
	tree, err := metadata.TreeLayouts(ctx, repo)
	if err != nil {
		return c, metadata.LayoutChoice{}, nil, fmt.Errorf("read the registry's layout: %w", err)
	}
	choice := metadata.LayoutChoice{Layout: c.Repository.Layout, Reason: "layoutVersion"}
	if c.Repository.LayoutSet {
		if err := metadata.CheckStartLayout(choice.Layout, readers); err != nil && !c.AllowLayoutMismatch {
			return c, choice, tree, err
		}
	} else {
		choice = metadata.ChooseLayout(tree, readers)
	}
	c.Repository.Layout = choice.Layout
	if c.Conf != nil {
		conf := *c.Conf
		conf.Mode.Repository.Layout = choice.Layout
		c.Conf = &conf
	}
	log.Info("registry layout", "writes", choice.Layout.String(), "because", choice.Reason, "tree", LayoutsText(tree))
	for _, r := range readers {
		if !r.Known || r.Layout != choice.Layout {
			log.Warn("a registered ShardingSphere node does not load this node's layout: rule changes it could not load are refused",
				"node", r.InstanceID, "version", r.Version, "writes", choice.Layout.String())
		}
	}
	return c, choice, tree, nil
}

// LayoutsText is layouts for an operator: "5.5.2, 5.5.3", "any 5.5.x"
// for every layout, "none (the tree mixes layouts)" for none.
func LayoutsText(layouts []paths.Layout) string {
	switch len(layouts) {
	case 0:
		return "none (the tree mixes layouts)"
	case len(paths.Layouts):
		return "any 5.5.x"
	}
	s := make([]string, len(layouts))
	for i, l := range layouts {
		s[i] = l.String()
	}
	return strings.Join(s, ", ")
}

// followMigrations moves layout to the one paths.RegistryLayout records
// each time a migration writes it, until ctx ends: a node without
// layoutVersion writes the layout the tree was migrated to.
func followMigrations(ctx context.Context, repo registry.Repository, layout *paths.LayoutVar, log *slog.Logger) {
	err := registry.Follow(ctx, repo, paths.RegistryLayout, func(ev registry.Event) {
		if ev.Err != nil || ev.Type == registry.EventDelete || ev.KV.Key != paths.RegistryLayout {
			return
		}
		l, err := paths.ParseLayout(string(ev.KV.Value))
		if err != nil {
			log.Warn("the recorded registry layout is not a 5.5.x release; this node keeps its layout", "key", paths.RegistryLayout, "value", string(ev.KV.Value), "writes", layout.Load().String())
			return
		}
		if old := layout.Load(); old != l {
			layout.Store(l)
			log.Info("registry layout: the tree was migrated; this node writes its new layout", "writes", l.String(), "was", old.String())
		}
	})
	if err != nil && ctx.Err() == nil {
		log.Warn("stopped following the registry layout record", "err", err)
	}
}
