package localcluster

import (
	"fmt"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/test/proc"
)

// The control plane's processes: started with their logs in the work dir, and supervised once
// the cluster has started (restarted when they exit, as the kubelet restarts static pods).

// logTailBytes is how much of a component's log an error quotes.
const logTailBytes = 3000

// component is a started control-plane process. proc, started, down, supervised and ran change
// when the component is (re)started or stopped, under Cluster.mu.
type component struct {
	name    string
	path    string
	args    []string
	logPath string
	proc    *proc.Process
	grace   time.Duration // how long Stop waits after SIGTERM
	started time.Time
	down    bool // stopped on purpose (StopAPIServer); not restarted until StartAPIServer
	// supervised: the cluster has started, and an exit restarts the process (supervise).
	supervised bool
	ran        chan struct{} // closed and replaced whenever proc is replaced
}

// start starts a component whose output goes to <WorkDir>/<name>.log.
func (c *Cluster) start(name, path string, grace time.Duration, args ...string) (*component, error) {
	comp := &component{name: name, path: path, args: args, logPath: c.logPath(name), grace: grace, ran: make(chan struct{})}
	if err := c.run(comp); err != nil {
		return nil, err
	}
	c.components = append(c.components, comp)
	return comp, nil
}

// run starts comp's process (again, after a stop); its output is appended to its log.
func (c *Cluster) run(comp *component) error {
	p, err := proc.Start(proc.Spec{Name: comp.name, Path: comp.path, Args: comp.args, Dir: c.workDir, LogPath: comp.logPath})
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	comp.proc, comp.started, comp.down = p, time.Now(), false
	close(comp.ran)
	comp.ran = make(chan struct{})
	return nil
}

// superviseAll hands every component to supervise: from now on an exit restarts it.
func (c *Cluster) superviseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.components {
		comp.supervised = true
		c.supervisors.Go(func() { c.supervise(comp) })
	}
}

// Supervision: once the cluster has started, a component whose process exits is started again,
// as the kubelet restarts a control plane's static pods. kube-scheduler, for one, exits on purpose
// when its cache is inconsistent, which an API server that restarts can cause.
const (
	// restartDelay is the first delay before a restart; it doubles, up to maxRestartDelay, while
	// the component keeps exiting within stableRun of its start.
	restartDelay    = 500 * time.Millisecond
	maxRestartDelay = 10 * time.Second
	stableRun       = 30 * time.Second
)

// supervise restarts comp whenever its process exits, until the cluster stops. A component
// stopped on purpose (StopAPIServer) is left down until it is started again.
func (c *Cluster) supervise(comp *component) {
	delay := restartDelay
	for {
		c.mu.Lock()
		p, ran := comp.proc, comp.ran
		c.mu.Unlock()
		select {
		case <-p.Done():
		case <-ran: // replaced (StartAPIServer): watch the new process
			continue
		case <-c.stopCh:
			return
		}
		c.mu.Lock()
		stopped, down, replaced, started := c.stopped, comp.down, comp.proc != p, comp.started
		c.mu.Unlock()
		if stopped {
			return
		}
		if down || replaced {
			select {
			case <-ran:
				continue
			case <-c.stopCh:
				return
			}
		}
		_, err := p.Exited()
		if time.Since(started) > stableRun {
			delay = restartDelay
		}
		fmt.Fprintf(c.cfg.Log, "localcluster: %s exited (%v); restarting it in %v; end of %s:\n%s\n",
			comp.name, err, delay, comp.logPath, p.LogTail(logTailBytes))
		select {
		case <-time.After(delay):
		case <-c.stopCh:
			return
		}
		delay = min(2*delay, maxRestartDelay)
		c.mu.Lock()
		if !c.stopped && !comp.down && comp.proc == p {
			if err := c.run(comp); err != nil {
				fmt.Fprintf(c.cfg.Log, "localcluster: restart %s: %v\n", comp.name, err)
			}
		}
		c.mu.Unlock()
	}
}

// exitError reports a component that exited while the cluster was starting or waiting.
type exitError struct{ msg string }

func (e *exitError) Error() string { return e.msg }

// exited returns an *exitError, with the end of the component's log, if a component has exited
// while the cluster starts (one stopped on purpose, or supervised and so restarted, does not
// count).
func (c *Cluster) exited() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.components {
		if comp.down || comp.supervised {
			continue
		}
		if done, err := comp.proc.Exited(); done {
			return &exitError{fmt.Sprintf("localcluster: %s exited early (%v); end of %s:\n%s",
				comp.name, err, comp.logPath, comp.proc.LogTail(logTailBytes))}
		}
	}
	return nil
}
