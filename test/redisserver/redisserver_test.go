package redisserver

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, Config{IP: "127.0.0.77", Port: 16379, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr(), err)
	}
	c.Close()
	s.Stop()
	select {
	case <-s.Done():
	default:
		t.Fatal("server still running after Stop")
	}
}
