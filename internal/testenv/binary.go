package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
)

// ShardkeeperBinary builds cmd/shardkeeper once per test process and returns
// the path of the binary, for tests that run the real command (signals,
// exit codes, what it prints). The binary lives in a temporary directory
// that Main removes. A failed build fails the calling test with go build's
// output.
func ShardkeeperBinary(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() {
		if binaryDir, binaryErr = os.MkdirTemp("", "shardkeeper-bin-"); binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "shardkeeper")
		out, err := exec.Command("go", "build", "-o", binaryPath, "github.com/shardkeeper/shardkeeper/cmd/shardkeeper").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// Main runs a package's tests and removes what ShardkeeperBinary built. Use
// it as the package's TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if binaryDir != "" {
		_ = os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}
