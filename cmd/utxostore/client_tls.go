package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"

	"github.com/utxostore/utxostore/client"
)

// clientTLS is how `client` and `import --server` reach a daemon started
// with --tls-cert: the CA that signed its certificate (the certificate
// itself when self-signed) and the name to check it against.
type clientTLS struct {
	on         bool
	caFile     string
	serverName string
}

func (c *clientTLS) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "tls", false, "connect with TLS, trusting the system's roots (implied by --tls-ca and --tls-server-name)")
	fs.StringVar(&c.caFile, "tls-ca", "", "connect with TLS, trusting the CA certificates (PEM) in this file, e.g. the daemon's --tls-cert when self-signed")
	fs.StringVar(&c.serverName, "tls-server-name", "", "connect with TLS and check the daemon's certificate against this name instead of the --server host")
}

// config is the TLS configuration to dial with, nil for a plain connection.
func (c *clientTLS) config() (*tls.Config, error) {
	if !c.on && c.caFile == "" && c.serverName == "" {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: c.serverName, MinVersion: tls.VersionTLS12}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("reading --tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usagef("--tls-ca %s: no PEM certificate in it", c.caFile)
		}
	}
	return cfg, nil
}

// dial connects to the daemon at addr with the token and TLS settings.
func dial(addr, token string, t *clientTLS) (*client.Client, error) {
	cfg, err := t.config()
	if err != nil {
		return nil, err
	}
	return client.Dial(addr, client.Options{Token: token, TLS: cfg})
}
