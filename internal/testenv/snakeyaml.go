package testenv

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

// SnakeYAMLJar is Debian's libyaml-snake-java, the SnakeYAML 1.x that
// ShardingSphere 5.5 loads its registry values with.
const SnakeYAMLJar = "/usr/share/java/snakeyaml.jar"

// SnakeYAML compiles the Java source file src (a program that loads YAML
// with SnakeYAML into mirrors of ShardingSphere's YAML classes) against
// SnakeYAMLJar and returns a command that runs its class with args; the
// caller runs it and reads its output. Without a JDK or the jar it skips
// t, or fails it under SHARDKEEPER_REQUIRE_SERVERS=1 (scripts/servers.sh
// installs both). A failed compilation fails t.
func SnakeYAML(t testing.TB, src, class string) func(args ...string) *exec.Cmd {
	t.Helper()
	javac, errC := exec.LookPath("javac")
	java, errJ := exec.LookPath("java")
	_, errS := os.Stat(SnakeYAMLJar)
	if err := errors.Join(errC, errJ, errS); err != nil {
		msg := "the SnakeYAML check needs a JDK and " + SnakeYAMLJar + " (Debian default-jdk-headless, libyaml-snake-java): " + err.Error()
		if os.Getenv(EnvRequireServers) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, "-cp", SnakeYAMLJar, src).CombinedOutput(); err != nil {
		t.Fatalf("javac %s: %v\n%s", src, err, out)
	}
	classpath := SnakeYAMLJar + string(os.PathListSeparator) + dir
	return func(args ...string) *exec.Cmd {
		return exec.Command(java, append([]string{"-cp", classpath, class}, args...)...)
	}
}
