package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

// The control plane's command lines: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler (kwok's is in kwok.go), each listening on 127.0.0.1 on the cluster's ports.

const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1" // the kubernetes Service, first address of serviceCIDR
)

func (c *Cluster) startEtcd(pt ports) (*component, error) {
	peer := fmt.Sprintf("http://127.0.0.1:%d", pt.etcdPeer)
	client := fmt.Sprintf("http://127.0.0.1:%d", pt.etcdClient)
	return c.start("etcd", c.cfg.Binaries.Etcd, 10*time.Second,
		"--name=localcluster",
		"--data-dir="+filepath.Join(c.workDir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=localcluster="+peer,
		fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", pt.etcdMetrics),
		"--unsafe-no-fsync", // test data only
		"--log-level=warn",
	)
}

func (c *Cluster) startAPIServer(pt ports) (*component, error) {
	p := c.pki
	return c.start("kube-apiserver", c.cfg.Binaries.APIServer, 10*time.Second,
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", pt.etcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", pt.apiserver),
		"--cert-dir="+filepath.Join(c.workDir, "kube-apiserver"),
		"--tls-cert-file="+p.serverCert,
		"--tls-private-key-file="+p.serverKey,
		"--client-ca-file="+p.caCert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.saPub,
		"--service-account-signing-key-file="+p.saKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--requestheader-client-ca-file="+p.frontProxyCACert,
		"--requestheader-allowed-names="+frontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+p.proxyCert,
		"--proxy-client-key-file="+p.proxyKey,
		// Nothing can reach 127.0.0.1 through the kubernetes Service's endpoints.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
	)
}

func (c *Cluster) startControllerManager(pt ports) (*component, error) {
	p := c.pki
	args := []string{
		"--kubeconfig=" + p.kcmKubeconfig,
		"--authentication-kubeconfig=" + p.kcmKubeconfig,
		"--authorization-kubeconfig=" + p.kcmKubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", pt.kcm),
		"--cert-dir=" + filepath.Join(c.workDir, "kube-controller-manager"),
		// Every default controller, among them statefulset, disruption (PDB status, which the
		// Eviction API reads), garbage collector, serviceaccount, node lifecycle and pod GC.
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		// ServiceAccount tokens and the kube-root-ca.crt ConfigMaps.
		"--root-ca-file=" + p.caCert,
		"--service-account-private-key-file=" + p.saKey,
		"--cluster-signing-cert-file=" + p.caCert,
		"--cluster-signing-key-file=" + p.caKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allocate-node-cidrs=false", // AddNode sets each node's pod CIDR
		// Faster reactions than the defaults, for tests.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--concurrent-statefulset-syncs=10",
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		"--concurrent-gc-syncs=30",
		"--profiling=false",
	}
	if d := c.cfg.NodeMonitorGracePeriod; d > 0 {
		args = append(args, "--node-monitor-grace-period="+d.String())
	}
	if d := c.cfg.NodeMonitorPeriod; d > 0 {
		args = append(args, "--node-monitor-period="+d.String())
	}
	return c.start("kube-controller-manager", c.cfg.Binaries.ControllerManager, 5*time.Second, args...)
}

func (c *Cluster) startScheduler(pt ports) (*component, error) {
	p := c.pki
	config := map[string]any{
		"apiVersion": "kubescheduler.config.k8s.io/v1",
		"kind":       "KubeSchedulerConfiguration",
		"clientConnection": map[string]any{
			"kubeconfig": p.schedulerKubeconfig,
			"qps":        200,
			"burst":      400,
		},
		"leaderElection": map[string]any{"leaderElect": false},
		// Retry unschedulable pods sooner than the defaults (1 s, 10 s), for tests.
		"podInitialBackoffSeconds": 1,
		"podMaxBackoffSeconds":     2,
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("localcluster: kube-scheduler config: %w", err)
	}
	configPath := filepath.Join(c.workDir, "kube-scheduler.yaml")
	if err := os.WriteFile(configPath, data, 0o644); err != nil {
		return nil, fmt.Errorf("localcluster: kube-scheduler config: %w", err)
	}
	return c.start("kube-scheduler", c.cfg.Binaries.Scheduler, 5*time.Second,
		"--config="+configPath,
		"--authentication-kubeconfig="+p.schedulerKubeconfig,
		"--authorization-kubeconfig="+p.schedulerKubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", pt.scheduler),
		"--cert-dir="+filepath.Join(c.workDir, "kube-scheduler"),
	)
}
