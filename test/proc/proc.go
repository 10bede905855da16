// Package proc starts and stops the child processes of tests and the demo (etcd, kube-*, kwok,
// redis-server) so that none outlives its parent: every child gets its own process group and
// PR_SET_PDEATHSIG=SIGKILL, and Stop sends SIGTERM, then SIGKILL after a grace period.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Spec describes a process to start.
type Spec struct {
	// Name is a short label used in errors (for example "etcd").
	Name string
	// Path is the executable; Args are its arguments (without argv[0]).
	Path string
	Args []string
	// Env is appended to the parent's environment.
	Env []string
	// Dir is the working directory (the parent's when empty).
	Dir string
	// LogPath receives the process's stdout and stderr when not empty.
	LogPath string
	// Output, when LogPath is empty, receives stdout and stderr (discarded when nil).
	Output io.Writer
}

// Process is a running child process.
type Process struct {
	spec Spec
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // exit error, valid after done is closed

	stopOnce sync.Once
}

// Start starts the process described by spec. The process is killed with SIGKILL if the
// calling process dies (PR_SET_PDEATHSIG), and runs in its own process group.
func Start(spec Spec) (*Process, error) {
	if spec.Name == "" {
		spec.Name = filepath.Base(spec.Path)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Process{spec: spec, cmd: cmd, done: make(chan struct{})}
	switch {
	case spec.LogPath != "":
		f, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: log file: %w", spec.Name, err)
		}
		p.log = f
		cmd.Stdout, cmd.Stderr = f, f
	case spec.Output != nil:
		cmd.Stdout, cmd.Stderr = spec.Output, spec.Output
	}
	if err := cmd.Start(); err != nil {
		if p.log != nil {
			p.log.Close()
		}
		return nil, fmt.Errorf("%s: start %s: %w", spec.Name, spec.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		if p.log != nil {
			p.log.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and its exit error if so.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Wait blocks until the process exits or ctx ends.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop sends SIGTERM to the process group, waits up to grace for the process to exit, then sends
// SIGKILL and waits for it. It is safe to call more than once and after the process has exited.
func (p *Process) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		pgid := -p.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-p.done
		}
	})
	<-p.done
}

// Kill sends SIGKILL to the process group and waits for the process to exit (a crash, for tests).
func (p *Process) Kill() {
	p.stopOnce.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	})
	<-p.done
}

// LogTail returns up to n bytes from the end of the process's log file (empty without LogPath),
// for error messages.
func (p *Process) LogTail(n int64) string {
	if p.spec.LogPath == "" {
		return ""
	}
	f, err := os.Open(p.spec.LogPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	return string(buf)
}
