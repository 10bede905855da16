package redistest

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// Hanging is a Redis that accepts connections and never answers, as one whose process is
// stopped (SIGSTOP) or whose replies are lost: on one port of many loopback IPs, it reads every
// command and replies to none.
type Hanging struct {
	// Port is the port every IP listens on.
	Port int

	listeners []net.Listener
	mu        sync.Mutex
	conns     []net.Conn
	wg        sync.WaitGroup
}

// StartHanging listens on ip:Port for every ip of ips (the port is chosen on the first) and stops
// when the test ends.
func StartHanging(t testing.TB, ips []string) *Hanging {
	t.Helper()
	h := &Hanging{}
	t.Cleanup(h.close)
	for _, ip := range ips {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(h.Port)))
		if err != nil {
			t.Fatal(err)
		}
		if h.Port == 0 {
			h.Port = l.Addr().(*net.TCPAddr).Port
		}
		h.listeners = append(h.listeners, l)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				h.mu.Lock()
				h.conns = append(h.conns, c)
				h.mu.Unlock()
				h.wg.Add(1)
				go func() {
					defer h.wg.Done()
					_, _ = io.Copy(io.Discard, c) // read every command, answer none
				}()
			}
		}()
	}
	return h
}

// close stops listening and closes every connection.
func (h *Hanging) close() {
	for _, l := range h.listeners {
		l.Close()
	}
	h.mu.Lock()
	for _, c := range h.conns {
		c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}
