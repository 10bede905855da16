// Package pki issues the X.509 certificates of local test servers: a self-signed certificate
// authority (client-go's cert.NewSelfSignedCACert) and ECDSA P-256 leaf certificates it signs, in
// PEM. e2e/localcluster uses it for kube-apiserver's serving certificate and the components'
// client certificates, test/redistest for redis-server's TLS. It is a package of its own, apart
// from test/fixture, because it is crypto, not Kubernetes objects: it needs no API types and
// its two users need nothing else from the test-support layer.
//
// It may import the standard library and k8s.io/client-go/util/{cert,keyutil} only.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Validity is the lifetime of every leaf certificate; test servers live for minutes. (The CA
// gets client-go's ten years.)
const Validity = 7 * 24 * time.Hour

// KeyPair is a certificate and its private key, both PEM-encoded.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// Write writes the certificate to certPath and the key to keyPath, mode 0600.
func (k KeyPair) Write(certPath, keyPath string) error {
	if err := os.WriteFile(certPath, k.CertPEM, 0o600); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := os.WriteFile(keyPath, k.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	// KeyPair is the CA's own certificate and key.
	KeyPair
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA returns a new self-signed CA named commonName.
func NewCA(commonName string) (*CA, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	c, err := cert.NewSelfSignedCACert(cert.Config{CommonName: commonName}, key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA %s: %w", commonName, err)
	}
	certPEM, err := cert.EncodeCertificates(c)
	if err != nil {
		return nil, fmt.Errorf("pki: CA %s: %w", commonName, err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{KeyPair: KeyPair{CertPEM: certPEM, KeyPEM: keyPEM}, cert: c, key: key}, nil
}

// Leaf describes a certificate to issue.
type Leaf struct {
	// Subject is the certificate's subject (kube-apiserver reads the user from CommonName and
	// the groups from Organization).
	Subject pkix.Name
	// IPs and DNSNames are the subject alternative names a serving certificate is valid for.
	IPs      []net.IP
	DNSNames []string
	// Usages are the extended key usages: server auth, client auth, or both (redis-server uses
	// its serving certificate as a client on the cluster bus). Client auth when empty.
	Usages []x509.ExtKeyUsage
}

// Issue returns a new key and a certificate for l signed by the CA, valid from an hour ago for
// Validity.
func (c *CA) Issue(l Leaf) (KeyPair, error) {
	key, err := NewKey()
	if err != nil {
		return KeyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return KeyPair{}, fmt.Errorf("pki: serial: %w", err)
	}
	usages := l.Usages
	if len(usages) == 0 {
		usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               l.Subject,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           usages,
		BasicConstraintsValid: true,
		IPAddresses:           l.IPs,
		DNSNames:              l.DNSNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("pki: certificate %s: %w", l.Subject.CommonName, err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// NewKey returns a new ECDSA P-256 private key.
func NewKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: key: %w", err)
	}
	return key, nil
}

// EncodeKey returns key in PEM ("EC PRIVATE KEY" for ECDSA keys).
func EncodeKey(key crypto.PrivateKey) ([]byte, error) {
	b, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, fmt.Errorf("pki: key: %w", err)
	}
	return b, nil
}
