package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
)

// maxTokenFileSize bounds a token file: a bearer token is a line, not a
// document.
const maxTokenFileSize = 4 << 10

// readTokenFile returns the token held in the regular file at path (at
// most maxTokenFileSize bytes, surrounding white space removed). flag names
// the option in errors. A missing, empty, oversized or special file (a
// pipe, /dev/zero) is an error naming the path; ctx bounds the read.
func readTokenFile(ctx context.Context, flag, path string) (string, error) {
	b, err := config.ReadFile(ctx, path, maxTokenFileSize)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("%s %s is empty", flag, path)
	}
	if strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("%s %s holds more than one line: put the token alone on one line", flag, path)
	}
	return token, nil
}
