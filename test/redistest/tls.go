package redistest

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/redis-rebalancer/redis-rebalancer/test/pki"
)

// TLSFiles are the PEM files of a test PKI: a CA, a server certificate valid for every IP of a
// /24 (also usable as a client certificate, since redis-server uses it for its outgoing cluster
// bus and replication links), and a client certificate.
type TLSFiles struct {
	Dir                   string
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// WriteTLSFiles creates a CA (test/pki) and certificates for the IPs prefix.1 to prefix.254
// (prefix like "127.201.3") under dir.
func WriteTLSFiles(dir, prefix string) (*TLSFiles, error) {
	f := &TLSFiles{
		Dir:        dir,
		CA:         filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"),
		ServerKey:  filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"),
		ClientKey:  filepath.Join(dir, "client.key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := pki.NewCA("redistest CA")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(f.CA, ca.CertPEM, 0o600); err != nil {
		return nil, err
	}
	var ips []net.IP
	for i := 1; i <= 254; i++ {
		ips = append(ips, net.ParseIP(fmt.Sprintf("%s.%d", prefix, i)))
	}
	server, err := ca.Issue(pki.Leaf{
		Subject: pkix.Name{CommonName: "redis-server"}, IPs: ips,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	if err := server.Write(f.ServerCert, f.ServerKey); err != nil {
		return nil, err
	}
	client, err := ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "redisctl"}})
	if err != nil {
		return nil, err
	}
	if err := client.Write(f.ClientCert, f.ClientKey); err != nil {
		return nil, err
	}
	return f, nil
}
