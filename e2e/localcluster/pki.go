package localcluster

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
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// frontProxyClient is the common name of the apiserver's front-proxy client certificate.
const frontProxyClient = "front-proxy-client"

// certValidity is the lifetime of every generated certificate; clusters live for minutes.
const certValidity = 7 * 24 * time.Hour

// pki holds the paths of the generated certificates, keys and kubeconfigs.
type pki struct {
	caCert, caKey         string
	serverCert, serverKey string
	saKey, saPub          string
	// The aggregation layer's front proxy: its CA and the apiserver's client certificate.
	frontProxyCACert, proxyCert, proxyKey string
	// Kubeconfigs by user.
	adminKubeconfig, kcmKubeconfig, schedulerKubeconfig string
}

// keyPair is a certificate and its key in PEM.
type keyPair struct {
	certPEM, keyPEM []byte
}

// ca is a certificate authority that signs leaf certificates.
type ca struct {
	cert *x509.Certificate
	key  crypto.Signer
	keyPair
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func encodeKey(key crypto.PrivateKey) ([]byte, error) {
	return keyutil.MarshalPrivateKeyToPEM(key)
}

func newCA(name string) (*ca, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	c, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name}, key)
	if err != nil {
		return nil, err
	}
	certPEM, err := cert.EncodeCertificates(c)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &ca{cert: c, key: key, keyPair: keyPair{certPEM: certPEM, keyPEM: keyPEM}}, nil
}

// sign issues a certificate for subject: a serving certificate when ips or dnsNames are given,
// a client certificate otherwise.
func (c *ca) sign(subject pkix.Name, ips []net.IP, dnsNames []string) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IPAddresses:           ips,
		DNSNames:              dnsNames,
	}
	if len(ips) > 0 || len(dnsNames) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return keyPair{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM: keyPEM}, nil
}

// writePKI generates the cluster's CA, the apiserver's serving certificate, the service-account
// key pair and a kubeconfig per client (admin, kube-controller-manager, kube-scheduler) for the
// apiserver at serverURL, all under dir.
func writePKI(dir, serverURL string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		caCert:              filepath.Join(dir, "ca.crt"),
		caKey:               filepath.Join(dir, "ca.key"),
		serverCert:          filepath.Join(dir, "apiserver.crt"),
		serverKey:           filepath.Join(dir, "apiserver.key"),
		saKey:               filepath.Join(dir, "sa.key"),
		saPub:               filepath.Join(dir, "sa.pub"),
		frontProxyCACert:    filepath.Join(dir, "front-proxy-ca.crt"),
		proxyCert:           filepath.Join(dir, "front-proxy-client.crt"),
		proxyKey:            filepath.Join(dir, "front-proxy-client.key"),
		adminKubeconfig:     filepath.Join(dir, "admin.kubeconfig"),
		kcmKubeconfig:       filepath.Join(dir, "kube-controller-manager.kubeconfig"),
		schedulerKubeconfig: filepath.Join(dir, "kube-scheduler.kubeconfig"),
	}
	authority, err := newCA("localcluster-ca")
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	// Without a front-proxy (requestheader) CA, kube-controller-manager and kube-scheduler log
	// an error about it every few seconds.
	frontProxyCA, err := newCA("localcluster-front-proxy-ca")
	if err != nil {
		return nil, fmt.Errorf("front-proxy CA: %w", err)
	}
	proxy, err := frontProxyCA.sign(pkix.Name{CommonName: frontProxyClient}, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("front-proxy client certificate: %w", err)
	}
	server, err := authority.sign(pkix.Name{CommonName: "kube-apiserver"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return nil, fmt.Errorf("apiserver certificate: %w", err)
	}
	saKey, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	saKeyPEM, err := encodeKey(saKey)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	files := []struct {
		path string
		data []byte
	}{
		{p.caCert, authority.certPEM},
		{p.caKey, authority.keyPEM},
		{p.serverCert, server.certPEM},
		{p.serverKey, server.keyPEM},
		{p.saKey, saKeyPEM},
		{p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		{p.frontProxyCACert, frontProxyCA.certPEM},
		{p.proxyCert, proxy.certPEM},
		{p.proxyKey, proxy.keyPEM},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	for _, u := range []struct {
		path    string
		subject pkix.Name
	}{
		{p.adminKubeconfig, pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}},
		{p.kcmKubeconfig, pkix.Name{CommonName: "system:kube-controller-manager"}},
		{p.schedulerKubeconfig, pkix.Name{CommonName: "system:kube-scheduler"}},
	} {
		client, err := authority.sign(u.subject, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s client certificate: %w", u.subject.CommonName, err)
		}
		if err := writeKubeconfig(u.path, serverURL, authority.certPEM, u.subject.CommonName, client); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", u.path, err)
		}
	}
	return p, nil
}

// writeKubeconfig writes a self-contained kubeconfig (certificates embedded) for user at path.
func writeKubeconfig(path, serverURL string, caPEM []byte, user string, client keyPair) error {
	const name = "localcluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: client.certPEM, ClientKeyData: client.keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}
