package daemon

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
)

// InstanceIDFile is the file in the embedded registry's data dir that
// keeps the node's default instance id, so that a node started again on
// the same data dir without an instance id gets the same one (and its
// worker id back).
const InstanceIDFile = "instance-id"

// maxInstanceIDFile bounds what is read of InstanceIDFile.
const maxInstanceIDFile = 512

// defaultInstanceID returns the instance id of a node started without
// one: on the embedded registry the id kept in its data dir (made and
// kept there on the first start), stable across restarts; elsewhere a
// new random one per start. random reports the latter. A kept id that is
// unreadable or not a valid instance id is an error naming the file.
func defaultInstanceID(repo config.Repository) (id string, random bool, err error) {
	if repo.Type != config.RepositoryEmbedded || repo.DataDir == "" {
		return cluster.NewInstanceID(), true, nil
	}
	file := filepath.Join(repo.DataDir, InstanceIDFile)
	id, err = readInstanceID(file)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, false, err
	}
	if err := os.MkdirAll(repo.DataDir, 0o700); err != nil {
		return "", false, fmt.Errorf("data dir %s: %w", repo.DataDir, err)
	}
	// Written whole under another name, then linked: a concurrent start
	// on the same data dir reads one id, never a partial file.
	tmp, err := os.CreateTemp(repo.DataDir, InstanceIDFile+".*")
	if err != nil {
		return "", false, fmt.Errorf("keep the instance id in %s: %w", repo.DataDir, err)
	}
	defer os.Remove(tmp.Name())
	id = cluster.NewInstanceID()
	_, werr := tmp.WriteString(id + "\n")
	serr := tmp.Sync()
	if err := errors.Join(werr, serr, tmp.Close()); err != nil {
		return "", false, fmt.Errorf("keep the instance id in %s: %w", file, err)
	}
	if err := os.Link(tmp.Name(), file); err != nil {
		if errors.Is(err, fs.ErrExist) {
			id, err = readInstanceID(file)
			return id, false, err
		}
		return "", false, fmt.Errorf("keep the instance id in %s: %w", file, err)
	}
	return id, false, nil
}

// readInstanceID reads and checks the instance id kept in file.
func readInstanceID(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, maxInstanceIDFile+1)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if n > maxInstanceIDFile {
		return "", fmt.Errorf("%s: longer than %d bytes: it should hold one instance id; remove it to get a new id (and a new worker id), or pass --instance-id", file, maxInstanceIDFile)
	}
	id := strings.TrimSpace(string(b[:n]))
	if _, err := paths.Status(id); err != nil || id == "" {
		return "", fmt.Errorf("%s: %q is not a valid instance id (%v): remove the file to get a new id (and a new worker id), or pass --instance-id", file, id, err)
	}
	return id, nil
}
