package localcluster

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/redis-rebalancer/redis-rebalancer/test/pki"
)

// frontProxyClient is the common name of the apiserver's front-proxy client certificate.
const frontProxyClient = "front-proxy-client"

// clusterPKI holds the paths of the generated certificates, keys and kubeconfigs.
type clusterPKI struct {
	caCert, caKey         string
	serverCert, serverKey string
	saKey, saPub          string
	// The aggregation layer's front proxy: its CA and the apiserver's client certificate.
	frontProxyCACert, proxyCert, proxyKey string
	// Kubeconfigs by user.
	adminKubeconfig, kcmKubeconfig, schedulerKubeconfig string
}

// writePKI generates the cluster's CA, the apiserver's serving certificate, the service-account
// key pair and a kubeconfig per client (admin, kube-controller-manager, kube-scheduler) for the
// apiserver at serverURL, all under dir.
func writePKI(dir, serverURL string) (*clusterPKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &clusterPKI{
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
	authority, err := pki.NewCA("localcluster-ca")
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	// Without a front-proxy (requestheader) CA, kube-controller-manager and kube-scheduler log
	// an error about it every few seconds.
	frontProxyCA, err := pki.NewCA("localcluster-front-proxy-ca")
	if err != nil {
		return nil, fmt.Errorf("front-proxy CA: %w", err)
	}
	proxy, err := frontProxyCA.Issue(pki.Leaf{Subject: pkix.Name{CommonName: frontProxyClient}})
	if err != nil {
		return nil, fmt.Errorf("front-proxy client certificate: %w", err)
	}
	server, err := authority.Issue(pki.Leaf{
		Subject:  pkix.Name{CommonName: "kube-apiserver"},
		IPs:      []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		Usages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("apiserver certificate: %w", err)
	}
	saKey, err := pki.NewKey()
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	saKeyPEM, err := pki.EncodeKey(saKey)
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
		{p.caCert, authority.CertPEM},
		{p.caKey, authority.KeyPEM},
		{p.serverCert, server.CertPEM},
		{p.serverKey, server.KeyPEM},
		{p.saKey, saKeyPEM},
		{p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		{p.frontProxyCACert, frontProxyCA.CertPEM},
		{p.proxyCert, proxy.CertPEM},
		{p.proxyKey, proxy.KeyPEM},
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
		client, err := authority.Issue(pki.Leaf{Subject: u.subject})
		if err != nil {
			return nil, fmt.Errorf("%s client certificate: %w", u.subject.CommonName, err)
		}
		if err := writeKubeconfig(u.path, serverURL, authority.CertPEM, u.subject.CommonName, client); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", u.path, err)
		}
	}
	return p, nil
}

// writeKubeconfig writes a self-contained kubeconfig (certificates embedded) for user at path.
func writeKubeconfig(path, serverURL string, caPEM []byte, user string, client pki.KeyPair) error {
	const name = "localcluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: client.CertPEM, ClientKeyData: client.KeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}
