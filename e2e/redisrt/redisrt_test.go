package redisrt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-redis/redis/v8"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// The tests run real redis-servers on 127.10.24x.y (each test its own /24) and a port other than
// 6379, so they do not collide with a kwok cluster's Redis pods on the same machine.
const testPort = 17379

const ns = "redis"

var redisLabels = map[string]string{"app.kubernetes.io/name": "redis"}

func testSelector() labels.Selector { return labels.SelectorFromSet(redisLabels) }

// logLines collects the runtime's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.Split(strings.TrimRight(string(p), "\n"), "\n")...)
	return len(p), nil
}

var pidRE = regexp.MustCompile(`pid \d+`)

// get returns the lines for key ("ns/pod"), pids replaced by N and stop reasons cut when !reasons.
func (l *logLines) get(key string, reasons bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if !strings.HasPrefix(line, "redis-server "+key+" ") {
			continue
		}
		line = pidRE.ReplaceAllString(line, "pid N")
		if !reasons {
			if i := strings.Index(line, "): "); i >= 0 {
				line = line[:i+1]
			}
		}
		out = append(out, line)
	}
	return out
}

type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	rt     *Runtime
	log    *logLines
	root   string
}

// newEnv starts a runtime for namespace ns on a fake clientset holding pods.
func newEnv(t *testing.T, workers int, pods ...*corev1.Pod) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	client := fake.NewClientset()
	for _, p := range pods {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	log := &logLines{}
	root := t.TempDir()
	rt := StartForTest(t, Config{
		Client:    client,
		Namespace: ns,
		Selector:  testSelector(),
		DataRoot:  root,
		Port:      testPort,
		Workers:   workers,
		Log:       log,
	})
	t.Cleanup(func() {
		if t.Failed() {
			log.mu.Lock()
			defer log.mu.Unlock()
			t.Logf("runtime log:\n%s", strings.Join(log.lines, "\n"))
		}
	})
	return &env{t: t, ctx: ctx, client: client, rt: rt, log: log, root: root}
}

func runningPod(namespace, name, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, Labels: redisLabels,
			UID: types.UID(fmt.Sprintf("%s-%s-%d", name, ip, time.Now().UnixNano())),
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
}

func (e *env) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	p, err := e.client.CoreV1().Pods(p.Namespace).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod: %v", err)
	}
	return p
}

// update applies mutate to the stored pod.
func (e *env) update(name string, mutate func(*corev1.Pod)) {
	e.t.Helper()
	p, err := e.client.CoreV1().Pods(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get pod %s: %v", name, err)
	}
	mutate(p)
	if _, err := e.client.CoreV1().Pods(ns).Update(e.ctx, p, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update pod %s: %v", name, err)
	}
}

func (e *env) delete(name string) {
	e.t.Helper()
	if err := e.client.CoreV1().Pods(ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete pod %s: %v", name, err)
	}
}

func (e *env) waitServer(name, ip string) ServerInfo {
	e.t.Helper()
	s, err := e.rt.WaitForServer(e.ctx, ns, name, ip)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// redisDo runs one command against addr.
func redisDo(ctx context.Context, addr string, args ...any) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	return c.Do(ctx, args...).Text()
}

// redisConfig returns the values of the named configuration parameters of the server at addr.
func redisConfig(ctx context.Context, t *testing.T, addr string, names ...string) map[string]string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	out := map[string]string{}
	for _, name := range names {
		kv, err := c.ConfigGet(ctx, name).Result()
		if err != nil || len(kv) != 2 {
			t.Fatalf("CONFIG GET %s on %s = %v, %v", name, addr, kv, err)
		}
		out[name] = fmt.Sprint(kv[1])
	}
	return out
}

// mustPingMyID checks that the server at addr answers PING and returns its cluster node ID.
func (e *env) mustPingMyID(addr string) string {
	e.t.Helper()
	if pong, err := redisDo(e.ctx, addr, "PING"); err != nil || pong != "PONG" {
		e.t.Fatalf("PING %s = %q, %v; want PONG", addr, pong, err)
	}
	id, err := redisDo(e.ctx, addr, "CLUSTER", "MYID")
	if err != nil || len(id) != 40 {
		e.t.Fatalf("CLUSTER MYID %s = %q, %v; want a 40-character node ID", addr, id, err)
	}
	return id
}

// assertGone checks that pid has exited and, unless addr is "", that nothing listens on addr.
func (e *env) assertGone(pid int, addr string) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			return false, nil
		}
		if addr == "" {
			return true, nil
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		e.t.Fatalf("redis-server pid %d on %s still running: %v", pid, addr, err)
	}
}

func addr(ip string) string { return net.JoinHostPort(ip, strconv.Itoa(testPort)) }

func TestConfigDefaults(t *testing.T) {
	client := fake.NewClientset()
	got, err := Config{Client: client, DataRoot: "data"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("data")
	want := Config{Client: client, DataRoot: abs, Port: 6379, RedisServer: "redis-server", Workers: DefaultWorkers}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Config{}, "Client", "Selector", "Log")); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if !got.Selector.Empty() || got.Log == nil {
		t.Errorf("Selector = %v, Log = %v; want everything and a writer", got.Selector, got.Log)
	}
}

func TestConfigInvalid(t *testing.T) {
	client := fake.NewClientset()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no client", Config{DataRoot: "d"}, "Client is required"},
		{"no data root", Config{Client: client}, "DataRoot is required"},
		{"port too high", Config{Client: client, DataRoot: "d", Port: 60000}, "out of range"},
		{"negative port", Config{Client: client, DataRoot: "d", Port: -1}, "out of range"},
		{"negative workers", Config{Client: client, DataRoot: "d", Workers: -2}, "Workers -2 is negative"},
		{"negative node timeout", Config{Client: client, DataRoot: "d", NodeTimeout: -time.Second}, "NodeTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "redisrt: ") {
				t.Errorf("Start error = %v; want redisrt: ...%s...", err, tc.want)
			}
		})
	}
	t.Run("missing binary", func(t *testing.T) {
		_, err := Start(context.Background(), Config{Client: client, DataRoot: t.TempDir(), RedisServer: "no-such-redis-server"})
		if err == nil || !strings.Contains(err.Error(), "no-such-redis-server") {
			t.Errorf("Start error = %v; want one naming the missing binary", err)
		}
	})
}

func TestDesired(t *testing.T) {
	now := metav1.Now()
	running := runningPod(ns, "p", "127.10.240.1")
	type result struct{ IP, WhyNot string }
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		nilPod bool
		want   result
	}{
		{name: "running", mutate: func(*corev1.Pod) {}, want: result{IP: "127.10.240.1"}},
		{name: "deleted", nilPod: true, want: result{WhyNot: "pod deleted"}},
		{name: "not selected", mutate: func(p *corev1.Pod) { p.Labels = nil }, want: result{WhyNot: "pod no longer selected"}},
		{name: "terminating", mutate: func(p *corev1.Pod) { p.DeletionTimestamp = &now }, want: result{WhyNot: "pod is terminating"}},
		{name: "pending", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }, want: result{WhyNot: `pod phase is "Pending"`}},
		{name: "succeeded", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, want: result{WhyNot: `pod phase is "Succeeded"`}},
		{name: "no IP", mutate: func(p *corev1.Pod) { p.Status.PodIP = "" }, want: result{WhyNot: "pod has no IP"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pod *corev1.Pod
			if !tc.nilPod {
				pod = running.DeepCopy()
				tc.mutate(pod)
			}
			var got result
			got.IP, got.WhyNot = desired(pod, testSelector())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("desired (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSelection checks that only selected Running pods with an IP in the namespace get a server,
// and that the server is a real cluster-mode redis-server on the pod IP with its data directory.
// One worker and the fake watch's ordering make it deterministic: once the last pod's server runs,
// every earlier event has been reconciled.
func TestSelection(t *testing.T) {
	e := newEnv(t, 1, runningPod(ns, "before-start", "127.10.241.1")) // seen by the initial list
	pending := runningPod(ns, "pending", "")
	pending.Status.Phase = corev1.PodPending
	e.create(pending)
	unselected := runningPod(ns, "unselected", "127.10.241.3")
	unselected.Labels = map[string]string{"app": "other"}
	e.create(unselected)
	e.create(runningPod("other-namespace", "redis-0", "127.10.241.4"))
	e.update("pending", func(p *corev1.Pod) { p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "127.10.241.2" })
	last := e.waitServer("pending", "127.10.241.2")

	var got []ServerInfo
	if err := e.rt.WaitFor(e.ctx, func(s []ServerInfo) bool { got = s; return len(s) >= 2 }); err != nil {
		t.Fatal(err)
	}
	want := []ServerInfo{
		{Namespace: ns, Name: "before-start", IP: "127.10.241.1", Addr: addr("127.10.241.1"), Dir: filepath.Join(e.root, ns, "before-start")},
		{Namespace: ns, Name: "pending", IP: "127.10.241.2", Addr: addr("127.10.241.2"), Dir: filepath.Join(e.root, ns, "pending")},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ServerInfo{}, "Pid", "UID")); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if a, ok := e.rt.Addr(ns, "pending"); !ok || a != last.Addr {
		t.Errorf("Addr(pending) = %q, %v; want %q, true", a, ok, last.Addr)
	}
	for _, name := range []string{"unselected", "missing"} {
		if a, ok := e.rt.Addr(ns, name); ok {
			t.Errorf("Addr(%s) = %q, true; want no server", name, a)
		}
	}
	for _, s := range got {
		e.mustPingMyID(s.Addr)
		wantConfig := map[string]string{"cluster-enabled": "yes", "cluster-announce-ip": s.IP, "bind": s.IP, "appendonly": "yes", "dir": s.Dir}
		if diff := cmp.Diff(wantConfig, redisConfig(e.ctx, t, s.Addr, "cluster-enabled", "cluster-announce-ip", "bind", "appendonly", "dir")); diff != "" {
			t.Errorf("%s: CONFIG GET (-want +got):\n%s", s.Name, diff)
		}
		if _, err := os.Stat(filepath.Join(s.Dir, "nodes.conf")); err != nil {
			t.Errorf("nodes.conf of %s: %v", s.Name, err)
		}
	}
	if diff := cmp.Diff([]string{"redis-server redis/pending started on 127.10.241.2:17379 (pid N)"}, e.log.get("redis/pending", true)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestStopWhen checks every way a pod stops wanting its server.
func TestStopWhen(t *testing.T) {
	e := newEnv(t, 0)
	now := metav1.Now()
	for i, tc := range []struct {
		name   string
		change func(name string)
		reason string
	}{
		{"terminating", func(n string) { e.update(n, func(p *corev1.Pod) { p.DeletionTimestamp = &now }) }, "pod is terminating"},
		{"deleted", e.delete, "pod deleted"},
		{"succeeded", func(n string) { e.update(n, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }) }, `pod phase is "Succeeded"`},
		{"ip removed", func(n string) { e.update(n, func(p *corev1.Pod) { p.Status.PodIP = "" }) }, "pod has no IP"},
		{"unlabelled", func(n string) { e.update(n, func(p *corev1.Pod) { p.Labels = nil }) }, "pod no longer selected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			name, ip := "pod-"+strings.ReplaceAll(tc.name, " ", "-"), fmt.Sprintf("127.10.242.%d", i+1)
			e.create(runningPod(ns, name, ip))
			s := e.waitServer(name, ip)
			e.mustPingMyID(s.Addr)
			tc.change(name)
			if err := e.rt.WaitForNoServer(e.ctx, ns, name); err != nil {
				t.Fatal(err)
			}
			e.assertGone(s.Pid, s.Addr)
			want := []string{
				fmt.Sprintf("redis-server redis/%s started on %s (pid N)", name, s.Addr),
				fmt.Sprintf("redis-server redis/%s stopped on %s (pid N): %s", name, s.Addr, tc.reason),
			}
			if diff := cmp.Diff(want, e.log.get(ns+"/"+name, true)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIdentityKept checks that a pod recreated or moved (same name, new IP or UID) gets a new
// server, started only after the old one has exited, with the same data directory and node ID.
func TestIdentityKept(t *testing.T) {
	e := newEnv(t, 0)
	now := metav1.Now()
	for i, tc := range []struct {
		name  string
		newIP bool
		move  func(name, ip string)
	}{
		{"recreated on another node", true, func(n, ip string) {
			e.update(n, func(p *corev1.Pod) { p.DeletionTimestamp = &now })
			e.delete(n)
			e.create(runningPod(ns, n, ip))
		}},
		{"recreated at once", true, func(n, ip string) { e.delete(n); e.create(runningPod(ns, n, ip)) }},
		{"recreated on the same node", false, func(n, ip string) { e.delete(n); e.create(runningPod(ns, n, ip)) }},
		{"ip changed in place", true, func(n, ip string) { e.update(n, func(p *corev1.Pod) { p.Status.PodIP = ip }) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			name := fmt.Sprintf("shard-%d-0", i)
			ip1 := fmt.Sprintf("127.10.243.%d", 2*i+1)
			ip2 := ip1
			if tc.newIP {
				ip2 = fmt.Sprintf("127.10.243.%d", 2*i+2)
			}
			e.create(runningPod(ns, name, ip1))
			s1 := e.waitServer(name, ip1)
			id1 := e.mustPingMyID(s1.Addr)
			tc.move(name, ip2)
			var s2 ServerInfo
			err := e.rt.WaitFor(e.ctx, func(servers []ServerInfo) bool {
				for _, s := range servers {
					if s.Name == name && s.IP == ip2 && s.Pid != s1.Pid {
						s2 = s
						return true
					}
				}
				return false
			})
			if err != nil {
				t.Fatal(err)
			}
			oldAddr := s1.Addr
			if s2.Addr == oldAddr {
				oldAddr = "" // the new server listens there
			}
			e.assertGone(s1.Pid, oldAddr)
			if id2 := e.mustPingMyID(s2.Addr); id2 != id1 {
				t.Errorf("CLUSTER MYID after the move = %s; want %s (the same nodes.conf)", id2, id1)
			}
			if s2.Dir != s1.Dir {
				t.Errorf("data dir after the move = %s; want %s", s2.Dir, s1.Dir)
			}
			want := []string{
				fmt.Sprintf("redis-server redis/%s started on %s (pid N)", name, s1.Addr),
				fmt.Sprintf("redis-server redis/%s stopped on %s (pid N)", name, s1.Addr),
				fmt.Sprintf("redis-server redis/%s started on %s (pid N)", name, s2.Addr),
			}
			if diff := cmp.Diff(want, e.log.get(ns+"/"+name, false)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAddressReused checks that a pod given the IP of a pod being deleted gets its server once the
// old pod's server has released the address.
func TestAddressReused(t *testing.T) {
	e := newEnv(t, 0)
	const ip = "127.10.244.1"
	e.create(runningPod(ns, "old", ip))
	old := e.waitServer("old", ip)
	e.delete("old")
	e.create(runningPod(ns, "new", ip))
	s := e.waitServer("new", ip)
	e.assertGone(old.Pid, "")
	e.mustPingMyID(s.Addr)
}

// TestCrashRestart checks that a server killed behind the runtime's back is restarted on the same
// IP with the same data directory, and restarted again after a second crash.
func TestCrashRestart(t *testing.T) {
	e := newEnv(t, 0)
	const ip = "127.10.245.1"
	e.create(runningPod(ns, "redis-0", ip))
	s := e.waitServer("redis-0", ip)
	id := e.mustPingMyID(s.Addr)
	for restart := 1; restart <= 2; restart++ {
		if err := syscall.Kill(s.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		prev := s
		err := e.rt.WaitFor(e.ctx, func(servers []ServerInfo) bool {
			for _, x := range servers {
				if x.Name == "redis-0" && x.Restarts == restart {
					s = x
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Fatalf("restart %d: %v", restart, err)
		}
		if s.Pid == prev.Pid || s.Addr != prev.Addr || s.Dir != prev.Dir {
			t.Errorf("restarted server = %+v; want a new pid with the address and dir of %+v", s, prev)
		}
		if got := e.mustPingMyID(s.Addr); got != id {
			t.Errorf("CLUSTER MYID after restart %d = %s; want %s", restart, got, id)
		}
	}
	want := []string{
		"redis-server redis/redis-0 started on 127.10.245.1:17379 (pid N)",
		"redis-server redis/redis-0 exited unexpectedly on 127.10.245.1:17379 (pid N; log " + filepath.Join(s.Dir, "redis.log") + "); restarting in 0s",
		"redis-server redis/redis-0 started on 127.10.245.1:17379 (pid N, restart 1)",
		"redis-server redis/redis-0 exited unexpectedly on 127.10.245.1:17379 (pid N; log " + filepath.Join(s.Dir, "redis.log") + "); restarting in 200ms",
		"redis-server redis/redis-0 started on 127.10.245.1:17379 (pid N, restart 2)",
	}
	if diff := cmp.Diff(want, e.log.get("redis/redis-0", true)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestStop checks that Stop, or the end of Start's context, stops every server and keeps the data.
func TestStop(t *testing.T) {
	for i, tc := range []struct {
		name string
		stop func(rt *Runtime, cancel context.CancelFunc)
	}{
		{"Stop", func(rt *Runtime, _ context.CancelFunc) { rt.Stop() }},
		{"Stop twice at once", func(rt *Runtime, _ context.CancelFunc) {
			var wg sync.WaitGroup
			wg.Go(rt.Stop)
			rt.Stop()
			wg.Wait()
		}},
		{"context cancelled", func(rt *Runtime, cancel context.CancelFunc) {
			cancel()
			rt.Stop() // waits for the stop the cancellation started
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			client := fake.NewClientset()
			root := t.TempDir()
			log := &logLines{}
			rctx, rcancel := context.WithCancel(ctx)
			defer rcancel()
			rt, err := Start(rctx, Config{Client: client, Selector: testSelector(), DataRoot: root, Port: testPort, Log: log})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rt.Stop)
			e := &env{t: t, ctx: ctx, client: client, rt: rt, log: log, root: root}
			for j := range 3 {
				e.create(runningPod(ns, fmt.Sprintf("redis-%d", j), fmt.Sprintf("127.10.246.%d", 10*i+j+1)))
			}
			if err := rt.WaitForServers(ctx, 3); err != nil {
				t.Fatal(err)
			}
			servers := rt.Servers()
			tc.stop(rt, rcancel)
			for _, s := range servers {
				if err := syscall.Kill(s.Pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("%s: pid %d still exists after Stop (kill 0: %v)", s.Name, s.Pid, err)
				}
				if c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond); err == nil {
					c.Close()
					t.Errorf("%s: %s still accepts connections after Stop", s.Name, s.Addr)
				}
				if _, ok := rt.Addr(ns, s.Name); ok {
					t.Errorf("Addr(%s) still reports a server after Stop", s.Name)
				}
				if _, err := os.Stat(filepath.Join(s.Dir, "nodes.conf")); err != nil {
					t.Errorf("data of %s lost: %v", s.Name, err)
				}
				want := []string{
					fmt.Sprintf("redis-server redis/%s started on %s (pid N)", s.Name, s.Addr),
					fmt.Sprintf("redis-server redis/%s stopped on %s (pid N): runtime stopped", s.Name, s.Addr),
				}
				if diff := cmp.Diff(want, log.get(ns+"/"+s.Name, true)); diff != "" {
					t.Errorf("log (-want +got):\n%s", diff)
				}
			}
			if len(rt.Servers()) != 0 {
				t.Errorf("Servers() after Stop = %v; want none", rt.Servers())
			}
			if err := rt.WaitForServers(ctx, 3); err == nil {
				t.Errorf("WaitForServers after Stop succeeded; want an error")
			}
		})
	}
}

// TestPause checks that a paused server stays down (no answer, no restart, same process) until
// it is resumed with its data, and that a paused server whose pod goes away is stopped at once.
func TestPause(t *testing.T) {
	e := newEnv(t, 0)
	const ip = "127.10.247.1"
	e.create(runningPod(ns, "redis-0", ip))
	s := e.waitServer("redis-0", ip)
	id := e.mustPingMyID(s.Addr)

	p, err := e.rt.Pause(ns, "redis-0")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Paused || p.Pid != s.Pid {
		t.Errorf("Pause returned %+v; want pid %d, paused", p, s.Pid)
	}
	if _, err := e.rt.Pause(ns, "redis-0"); err == nil || !strings.Contains(err.Error(), "already paused") {
		t.Errorf("Pause twice: got %v, want an error saying it is already paused", err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 1500*time.Millisecond)
	defer cancel()
	if got, err := redisDo(ctx, s.Addr, "PING"); err == nil {
		t.Errorf("PING a paused server = %q; want no answer", got)
	}
	if got := e.rt.Servers(); len(got) != 1 || got[0].Pid != s.Pid || !got[0].Paused || got[0].Restarts != 0 {
		t.Errorf("Servers() while paused = %+v; want the same process, paused, never restarted", got)
	}

	if _, err := e.rt.Resume(ns, "redis-0"); err != nil {
		t.Fatal(err)
	}
	if got := e.mustPingMyID(s.Addr); got != id {
		t.Errorf("CLUSTER MYID after Resume = %s; want %s", got, id)
	}
	if _, err := e.rt.Resume(ns, "redis-0"); err == nil {
		t.Error("Resume of a running server: no error")
	}
	if _, err := e.rt.Pause(ns, "redis-1"); err == nil || !strings.Contains(err.Error(), "no server") {
		t.Errorf("Pause of a pod without a server: got %v, want an error saying so", err)
	}

	// A paused server whose pod is deleted is continued and stopped (SIGTERM), not killed after
	// the 10 s grace.
	if _, err := e.rt.Pause(ns, "redis-0"); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	e.delete("redis-0")
	e.assertGone(s.Pid, s.Addr)
	if took := time.Since(deleted); took > 5*time.Second {
		t.Errorf("paused server stopped %v after its pod's deletion; want well under the 10 s kill grace", took)
	}
	want := []string{
		"redis-server redis/redis-0 started on 127.10.247.1:17379 (pid N)",
		"redis-server redis/redis-0 paused (SIGSTOP) on 127.10.247.1:17379 (pid N)",
		"redis-server redis/redis-0 resumed (SIGCONT) on 127.10.247.1:17379 (pid N)",
		"redis-server redis/redis-0 paused (SIGSTOP) on 127.10.247.1:17379 (pid N)",
		"redis-server redis/redis-0 stopped on 127.10.247.1:17379 (pid N): pod deleted",
	}
	if diff := cmp.Diff(want, e.log.get("redis/redis-0", true)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestPassword checks that a server that requires a password (Config.ExtraArgs) counts as
// running.
func TestPassword(t *testing.T) {
	client := fake.NewClientset()
	rt := StartForTest(t, Config{Client: client, Namespace: ns, Selector: testSelector(), Port: testPort,
		ExtraArgs: []string{"--requirepass", "secret"}})
	e := &env{t: t, ctx: t.Context(), client: client, rt: rt}
	const ip = "127.10.248.1"
	e.create(runningPod(ns, "redis-0", ip))
	s := e.waitServer("redis-0", ip)
	if _, err := redisDo(e.ctx, s.Addr, "PING"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("PING without the password = %v; want NOAUTH", err)
	}
}

// TestDataFollowsTheVolume checks that a pod with a claim keeps its data with the claim's
// PersistentVolume: re-created with the same claim it gets the same data directory (the same
// Redis node ID); re-created after its claim was deleted and re-created on another volume it
// starts empty (a new node ID), while the old volume's directory keeps the old data. A pod whose
// claim is not bound yet gets no server until it is.
func TestDataFollowsTheVolume(t *testing.T) {
	e := newEnv(t, 0)
	const name, claim = "shard-0-1", "data-shard-0-1"
	bind := func(pv string) {
		t.Helper()
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}}
		_ = e.client.CoreV1().PersistentVolumeClaims(ns).Delete(e.ctx, claim, metav1.DeleteOptions{})
		if _, err := e.client.CoreV1().PersistentVolumeClaims(ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	withClaim := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}}}
		return p
	}
	// Not bound yet: no server; once bound, one on its volume's directory.
	bind("")
	e.create(withClaim(runningPod(ns, name, "127.10.249.1")))
	bind("pv-a")
	e.update(name, func(p *corev1.Pod) { p.Labels["bound"] = "yes" }) // a pod event: the runtime also retries by itself
	s1 := e.waitServer(name, "127.10.249.1")
	if want := filepath.Join(e.root, "volumes", "pv-a"); s1.Dir != want || s1.Volume != "pv-a" {
		t.Errorf("server on %s (volume %q), want %s (pv-a)", s1.Dir, s1.Volume, want)
	}
	id1 := e.mustPingMyID(s1.Addr)

	// Re-created with the same claim on another node: the same volume, the same node ID.
	e.delete(name)
	e.create(withClaim(runningPod(ns, name, "127.10.249.2")))
	s2 := e.waitServer(name, "127.10.249.2")
	e.assertGone(s1.Pid, s1.Addr)
	if id2 := e.mustPingMyID(s2.Addr); id2 != id1 || s2.Dir != s1.Dir {
		t.Errorf("same claim: node ID %s in %s, want %s in %s", id2, s2.Dir, id1, s1.Dir)
	}

	// Its claim released: deleted and re-created on volume pv-b; the pod re-created starts empty.
	e.delete(name)
	e.assertGone(s2.Pid, s2.Addr)
	bind("pv-b")
	e.create(withClaim(runningPod(ns, name, "127.10.249.3")))
	s3 := e.waitServer(name, "127.10.249.3")
	id3 := e.mustPingMyID(s3.Addr)
	if id3 == id1 || s3.Volume != "pv-b" || s3.Dir != filepath.Join(e.root, "volumes", "pv-b") {
		t.Errorf("released claim: node ID %s (volume %s, %s), want a new one on pv-b", id3, s3.Volume, s3.Dir)
	}
	if conf, err := os.ReadFile(filepath.Join(s1.Dir, "nodes.conf")); err != nil || !strings.Contains(string(conf), id1+" ") {
		t.Errorf("pv-a's nodes.conf no longer names node %s: %v %q", id1, err, conf)
	}
}
