package datasource

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestHostileDataSourceStringHidesSecrets prints data sources and their
// errors every way a log line or a message can (String, %v, %+v, %#v,
// Translate and Open errors) with passwords hidden in every form a JDBC URL
// allows: a password parameter after another one ending in "password",
// MySQL's multi-factor password1..3, a user-information password holding
// an @, secret custom pool props.
func TestHostileDataSourceStringHidesSecrets(t *testing.T) {
	secrets := []string{"SecA", "SecB", "mfa1", "mfa2", "mfa3", "p@ss", "ss@", "fieldpw", "poolpw"}
	ds := config.NewDataSource("jdbc:mysql://user:p@ss@127.0.0.1:3306/db?sslpassword=SecA&password=SecB&password1=mfa1&password2=mfa2&password3=mfa3",
		"user", "fieldpw")
	ds.CustomPoolProps = map[string]string{"dataSource.password": "poolpw", "cachePrepStmts": "true"}
	check := func(how, s string) {
		t.Helper()
		for _, w := range secrets {
			if strings.Contains(s, w) {
				t.Errorf("%s shows %q: %s", how, w, s)
			}
		}
	}
	check("String", ds.String())
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		check(verb, fmt.Sprintf(verb, ds))
	}
	for _, raw := range []string{
		"jdbc:postgresql://user:p@ss@[::1/db?password=SecB",                  // url.Parse fails
		"jdbc:oracle:thin:@h:1521/db?password=SecA&user=u&password2=SecB",    // unsupported
		"jdbc:mysql:///db?sslpassword=SecA&password=SecB&password1=mfa1",     // no host
		"jdbc:postgresql://user:p@ss@127.0.0.1:1/db?password=SecB&mfa1=mfa2", // unreachable (Open)
	} {
		bad := config.NewDataSource(raw, "user", "")
		_, err := Translate(bad)
		if err != nil {
			check("Translate "+raw, err.Error())
			continue
		}
		_, err = Open(testenv.Context(t), "ds_bad", bad)
		if err == nil {
			t.Fatalf("Open(%s) succeeded", raw)
		}
		check("Open "+raw, err.Error())
	}
	if s := ds.String(); !strings.Contains(s, "127.0.0.1:3306/db") || !strings.Contains(s, "username=user") || !strings.Contains(s, "cachePrepStmts=true") {
		t.Fatalf("String lost what is not secret: %s", s)
	}
}
