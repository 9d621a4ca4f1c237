// Package datasource opens the storage units of a logical database with
// real Go drivers (PostgreSQL: pgx, MySQL and MariaDB: go-sql-driver/mysql,
// SQLite: modernc.org/sqlite), translating ShardingSphere's JDBC URLs and
// honouring the pool props, and reads their catalogs (tables, columns,
// indexes, views). Errors name the unit and host and never contain the
// password.
package datasource

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/redact"
)

// Dialects.
const (
	PostgreSQL = "postgresql"
	MySQL      = "mysql" // MySQL and MariaDB
	SQLite     = "sqlite"
)

// Target is a translated JDBC URL: which Go driver to use and its DSN.
type Target struct {
	Dialect  string // PostgreSQL, MySQL or SQLite
	Driver   string // database/sql driver name: "pgx", "mysql", "sqlite"
	DSN      string // contains the password: never log it
	Host     string // host:port, or the file path for SQLite
	Database string // the catalog (database) name; the file for SQLite
}

// Translate turns a ShardingSphere data source into a Go driver DSN. It
// understands jdbc:postgresql://host[:port]/db[?...],
// jdbc:mysql://host[:port]/db[?...], jdbc:mariadb://... (the same) and
// jdbc:sqlite:path (also jdbc:sqlite::memory: and file: URIs). JDBC-only
// query parameters are dropped; ssl settings and connectTimeout carry over.
func Translate(ds config.DataSource) (Target, error) {
	raw := ds.URL
	switch {
	case strings.HasPrefix(raw, "jdbc:postgresql:"):
		return translateHost(ds, PostgreSQL, strings.TrimPrefix(raw, "jdbc:"), "5432")
	case strings.HasPrefix(raw, "jdbc:mysql:"), strings.HasPrefix(raw, "jdbc:mariadb:"):
		return translateHost(ds, MySQL, strings.TrimPrefix(raw, "jdbc:"), "3306")
	case strings.HasPrefix(raw, "jdbc:sqlite:"):
		path := strings.TrimPrefix(raw, "jdbc:sqlite:")
		if path == "" {
			return Target{}, fmt.Errorf("url %s: no database file after jdbc:sqlite:", redact.URL(raw))
		}
		dsn := path
		if path != ":memory:" && !strings.HasPrefix(path, "file:") {
			dsn = "file:" + path
		}
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		ms := max(ds.ConnectionTimeout.Milliseconds(), 1000)
		dsn += sep + "_pragma=busy_timeout(" + strconv.FormatInt(ms, 10) + ")"
		return Target{Dialect: SQLite, Driver: "sqlite", DSN: dsn, Host: path, Database: path}, nil
	}
	return Target{}, fmt.Errorf("url %s: unsupported (use jdbc:postgresql://, jdbc:mysql://, jdbc:mariadb:// or jdbc:sqlite:)", redact.URL(raw))
}

func translateHost(ds config.DataSource, dialect, rest, defaultPort string) (Target, error) {
	scheme, _, _ := strings.Cut(rest, ":")
	u, err := url.Parse(rest)
	if err != nil || u.Host == "" {
		return Target{}, fmt.Errorf("url %s: want jdbc:%s://host[:port]/database", redact.URL(ds.URL), scheme)
	}
	host := strings.Split(u.Host, ",")[0] // failover lists: the first host
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), defaultPort)
	}
	db := strings.TrimPrefix(u.Path, "/")
	q := u.Query()
	user, pass := ds.Username, ds.Password
	if user == "" {
		user = q.Get("user")
	}
	if pass == "" {
		pass = q.Get("password")
	}
	if u.User != nil {
		if user == "" {
			user = u.User.Username()
		}
		if p, ok := u.User.Password(); ok && pass == "" {
			pass = p
		}
	}
	timeout := ds.ConnectionTimeout
	if s := q.Get("connectTimeout"); s != "" { // JDBC: seconds (pg) or ms (mysql)
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			if dialect == MySQL {
				timeout = time.Duration(n) * time.Millisecond
			} else {
				timeout = time.Duration(n) * time.Second
			}
		}
	}
	if timeout <= 0 {
		timeout = config.DefaultConnectionTimeout
	}
	t := Target{Dialect: dialect, Host: host, Database: db}
	switch dialect {
	case PostgreSQL:
		pu := url.URL{Scheme: "postgres", Host: host, Path: "/" + db}
		if user != "" {
			pu.User = url.UserPassword(user, pass)
			if pass == "" {
				pu.User = url.User(user)
			}
		}
		pq := url.Values{}
		pq.Set("connect_timeout", strconv.Itoa(max(1, int(timeout.Seconds()))))
		switch {
		case q.Get("sslmode") != "":
			pq.Set("sslmode", q.Get("sslmode"))
		case q.Get("ssl") == "true":
			pq.Set("sslmode", "require")
		default:
			pq.Set("sslmode", "disable")
		}
		if s := q.Get("currentSchema"); s != "" {
			pq.Set("search_path", s)
		}
		if s := q.Get("ApplicationName"); s != "" {
			pq.Set("application_name", s)
		}
		pu.RawQuery = pq.Encode()
		t.Driver, t.DSN = "pgx", pu.String()
	case MySQL:
		c := mysql.NewConfig()
		c.User, c.Passwd, c.Net, c.Addr, c.DBName = user, pass, "tcp", host, db
		c.Timeout = timeout
		c.ParseTime = true
		switch strings.ToLower(q.Get("useSSL") + q.Get("sslMode")) {
		case "true", "required", "verify_ca", "verify_identity":
			c.TLSConfig = "skip-verify"
		case "preferred":
			c.TLSConfig = "preferred"
		}
		t.Driver, t.DSN = "mysql", c.FormatDSN()
	}
	return t, nil
}
