package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/drain"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
)

// drainRetry is how long the drain rows wait between two attempts at an eviction refused with
// 429: kubectl's default (5 s), set explicitly since the library's is 0.
const drainRetry = 5 * time.Second

// guardAddrRE finds the guard's address in serve's JSON log line "Serving the eviction guard".
var guardAddrRE = regexp.MustCompile(`"msg":"Serving the eviction guard".*"address":"([^"]+)"`)

// startGuard runs `redis-rebalancer serve --guard` on env (one replica, leader-elected on a Lease
// in env's namespace, no scheduled pass), with a serving certificate for 127.0.0.1, and installs
// the webhook configuration sending env's evictions to it (failurePolicy Ignore, as installed by
// default); it returns once the guard denies a dry-run eviction of a master. stop removes the
// configuration and stops serve.
func startGuard(ctx context.Context, cfg Config, env *harness.Env, log io.Writer) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "compare-guard-")
	if err != nil {
		return nil, err
	}
	var cleanups []func()
	stop = func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	ca, err := harness.GuardTLS(dir)
	if err != nil {
		return nil, err
	}
	name := "compare-guard-" + env.Namespace
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\nguard: {enabled: true, webhookConfigurationName: "+name+"}\n"), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Rebalancer, "serve", "--policy", policy, "--kubeconfig", env.Kubeconfig(), "-n", env.Namespace,
		"--redis-port", strconv.Itoa(env.Port), "--logging-format", "json", "--listen-address", "127.0.0.1:0",
		"--pass-on-start=false", "--schedule", "@yearly", "--leader-elect-resource-namespace", env.Namespace,
		"--guard-listen-address", "127.0.0.1:0", "--guard-cert-dir", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := guardAddrRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
	}()
	cleanups = append(cleanups, func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	var guardAddr string
	select {
	case guardAddr = <-addr:
	case <-exited:
		return nil, errors.New("redis-rebalancer serve --guard exited before serving the guard")
	case <-time.After(2 * time.Minute):
		return nil, errors.New("redis-rebalancer serve --guard: not serving the guard after 2 min")
	}
	w := harness.GuardWebhook{Name: name, Namespace: env.Namespace, URL: "https://" + guardAddr + guard.Path, CABundle: ca}
	if err := w.Install(ctx, env.Client()); err != nil {
		return nil, err
	}
	cleanups = append(cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = w.Uninstall(ctx, env.Client())
	})
	master, err := aMaster(ctx, env)
	if err != nil {
		return nil, err
	}
	err = harness.WaitDryRunEviction(ctx, env.Client(), env.Namespace, master, time.Minute, func(err error) bool {
		return apierrors.IsTooManyRequests(err) && guard.Denied(err.Error(), guard.ReasonMaster)
	})
	if err != nil {
		return nil, err
	}
	return stop, nil
}

// aMaster returns the name of a pod of env whose Redis node is a master serving slots.
func aMaster(ctx context.Context, env *harness.Env) (string, error) {
	topo, err := env.Redis.Topology(ctx, env.Addrs())
	if err != nil {
		return "", err
	}
	pods, err := env.Client().CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: env.Scenario.Selector()})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if n, ok := topo.NodeByIP(p.Status.PodIP); ok && n.IsMaster() && n.SlotCount() > 0 {
			return p.Name, nil
		}
	}
	return "", errors.New("no master serving slots")
}

// runDrain drains node as `kubectl drain` does (k8s.io/kubectl/pkg/drain: cordon, evict every pod
// of env's namespace, retrying a 429 every drainRetry), then uncordons it. It returns 0 and how
// long the drain took when it completed, 1 when it failed (within the budget).
func runDrain(ctx context.Context, cfg Config, env *harness.Env, node string, log io.Writer) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget+time.Minute)
	defer cancel()
	h := &drain.Helper{
		Ctx: ctx, Client: env.Client(), GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true,
		Timeout: cfg.Budget, EvictErrorRetryDelay: drainRetry, Out: log, ErrOut: log,
		AdditionalFilters: []drain.PodFilter{func(p corev1.Pod) drain.PodDeleteStatus {
			if p.Namespace != env.Namespace {
				return drain.MakePodDeleteStatusSkip()
			}
			return drain.MakePodDeleteStatusOkay()
		}},
	}
	n, err := env.Client().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 1, 0, err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h.Ctx = uctx
		if n, err := env.Client().CoreV1().Nodes().Get(uctx, node, metav1.GetOptions{}); err == nil {
			_ = drain.RunCordonOrUncordon(h, n, false)
		}
	}()
	if err := drain.RunCordonOrUncordon(h, n, true); err != nil {
		return 1, 0, err
	}
	start := time.Now()
	if err := drain.RunNodeDrain(h, node); err != nil {
		fmt.Fprintf(log, "compare: drain %s: %v\n", node, err)
		return 1, time.Since(start), nil
	}
	took := time.Since(start)
	fmt.Fprintf(log, "compare: drain of %s took %s\n", node, took.Round(100*time.Millisecond))
	return 0, took, nil
}
