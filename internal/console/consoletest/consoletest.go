// Package consoletest has the fixtures the tests of the console's front
// ends (internal/mysqlfront, internal/pgfront) share: users from an
// authority rule and a TLS certificate chain clients can verify (also used
// by internal/e2e for the serve processes' --tls-cert).
package consoletest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/config"
)

// Users returns a Config.Users function for the authority rule in the
// global.yaml text yaml; it fails t when yaml does not parse.
func Users(t testing.TB, yaml string) func() (*authority.Users, error) {
	t.Helper()
	cfg, err := config.ParseGlobal("global.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	u, err := authority.FromRules(cfg.GlobalRules...)
	if err != nil {
		t.Fatal(err)
	}
	return func() (*authority.Users, error) { return u, nil }
}

// CertFiles writes a test CA (ca.pem) and a certificate for localhost and
// 127.0.0.1 signed by it (cert.pem, with its key in key.pem) to dir, and
// returns the three paths: what serve's --tls-cert/--tls-key and a
// client's CA option (psql's sslrootcert, mariadb's --ssl-ca) take.
func CertFiles(t testing.TB, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shardkeeper test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for f, b := range map[string]*pem.Block{
		caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		certFile: {Type: "CERTIFICATE", Bytes: der},
		keyFile:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return caFile, certFile, keyFile
}

// TLS returns a server configuration with CertFiles' certificate, a client
// configuration that trusts its CA for 127.0.0.1, and the CA certificate's
// PEM file (for psql's sslrootcert) in t's temporary directory.
func TLS(t testing.TB) (server, client *tls.Config, caFile string) {
	t.Helper()
	caFile, certFile, keyFile := CertFiles(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("test CA does not parse")
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	client = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	return server, client, caFile
}
