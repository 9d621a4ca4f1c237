package testenv

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// SnakeYAMLJar is Debian's libyaml-snake-java, the SnakeYAML 1.x that
// ShardingSphere 5.5 loads its registry values with.
const SnakeYAMLJar = "/usr/share/java/snakeyaml.jar"

// CuratorJars are Debian's libcurator-recipes-java and
// libcurator-framework-java (Curator 5.4, on ZooKeeper 3.8), the client
// ShardingSphere's ZooKeeper repository is built on. Their manifests name
// the jars they need (curator-client, zookeeper, guava, slf4j).
var CuratorJars = []string{"/usr/share/java/curator-recipes.jar", "/usr/share/java/curator-framework.jar"}

// SnakeYAML compiles the Java source file src (a program that loads YAML
// with SnakeYAML into mirrors of ShardingSphere's YAML classes) against
// SnakeYAMLJar and returns a command that runs its class with args; the
// caller runs it and reads its output. Without a JDK or the jar it skips
// t, or fails it under SHARDKEEPER_REQUIRE_SERVERS=1 (scripts/servers.sh
// installs both). A failed compilation fails t.
func SnakeYAML(t testing.TB, src, class string) func(args ...string) *exec.Cmd {
	t.Helper()
	return Java(t, src, class, "the SnakeYAML check", "libyaml-snake-java", SnakeYAMLJar)
}

// Curator is SnakeYAML for a program on Curator (CuratorJars), the way
// ShardingSphere reads ZooKeeper.
func Curator(t testing.TB, src, class string) func(args ...string) *exec.Cmd {
	t.Helper()
	return Java(t, src, class, "the Curator check", "libcurator-framework-java, libcurator-recipes-java", CuratorJars...)
}

// Java compiles the Java source file src against jars and returns a
// command that runs its class with args. Without a JDK or one of the jars
// it skips t, or fails it under SHARDKEEPER_REQUIRE_SERVERS=1, naming what
// (the check) and pkgs (the Debian packages of the jars). A failed
// compilation fails t.
func Java(t testing.TB, src, class, what, pkgs string, jars ...string) func(args ...string) *exec.Cmd {
	t.Helper()
	javac, errC := exec.LookPath("javac")
	java, errJ := exec.LookPath("java")
	errs := []error{errC, errJ}
	for _, j := range jars {
		_, err := os.Stat(j)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		msg := what + " needs a JDK and " + strings.Join(jars, ", ") + " (Debian default-jdk-headless, " + pkgs + "): " + err.Error()
		if os.Getenv(EnvRequireServers) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	cp := strings.Join(jars, string(os.PathListSeparator))
	if out, err := exec.Command(javac, "-d", dir, "-cp", cp, src).CombinedOutput(); err != nil {
		t.Fatalf("javac %s: %v\n%s", src, err, out)
	}
	classpath := cp + string(os.PathListSeparator) + dir
	return func(args ...string) *exec.Cmd {
		return exec.Command(java, append([]string{"-cp", classpath, class}, args...)...)
	}
}

// JDBCJars are Debian's libmariadb-java (MariaDB Connector/J 2.7) and
// libpostgresql-jdbc-java (PostgreSQL JDBC 42.5), the drivers DBeaver,
// DataGrip and Java applications reach a database through.
var JDBCJars = []string{"/usr/share/java/mariadb-java-client.jar", "/usr/share/java/postgresql.jar"}

// JDBC is SnakeYAML for a program on the JDBC drivers (JDBCJars).
func JDBC(t testing.TB, src, class string) func(args ...string) *exec.Cmd {
	t.Helper()
	return Java(t, src, class, "the JDBC check", "libmariadb-java, libpostgresql-jdbc-java", JDBCJars...)
}
