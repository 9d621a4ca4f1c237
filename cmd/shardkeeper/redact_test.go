package main

import (
	"strings"
	"testing"
)

func TestRedactHidesUnitPasswords(t *testing.T) {
	unit := "/metadata/sharding_db/data_sources/units/ds_0/versions/0"
	value := "dataSourceClassName: com.zaxxer.hikari.HikariDataSource\npassword: s3cret\n" +
		"url: jdbc:mysql://root:s3cret@127.0.0.1:3306/demo?useSSL=false&password=s3cret\nusername: root\n"
	got := string(redact(unit, []byte(value)))
	if strings.Contains(got, "s3cret") {
		t.Fatalf("password shown:\n%s", got)
	}
	for _, want := range []string{"password: ******", "username: root", "127.0.0.1:3306/demo", "dataSourceClassName: com.zaxxer.hikari.HikariDataSource"} {
		if !strings.Contains(got, want) {
			t.Fatalf("redacted value lost %q:\n%s", want, got)
		}
	}
	other := "/props/versions/0"
	if got := string(redact(other, []byte("password: not-a-unit\n"))); got != "password: not-a-unit\n" {
		t.Fatalf("a value outside data source units changed: %q", got)
	}
}
