//go:build !linux

package keyserver

func uringModes() []serveMode { return nil }
