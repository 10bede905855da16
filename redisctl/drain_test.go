package redisctl

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A CLIENT LIST reply captured from redis-server 7.0.15, plus a replica link and a cluster
// client refreshing its slot map.
const clientList = `id=4 addr=127.0.0.1:36118 laddr=127.0.0.1:7777 fd=8 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=20448 argv-mem=10 multi-mem=0 rbs=16384 rbp=16384 obl=0 oll=0 omem=0 tot-mem=37658 events=r cmd=client|list user=default redir=-1 resp=2
id=5 addr=127.0.0.2:40001 laddr=127.0.0.1:7777 fd=9 name= age=30 idle=0 flags=S db=0 cmd=replconf user=default
id=6 addr=127.0.0.3:40002 laddr=127.0.0.1:7777 fd=10 name= age=30 idle=0 flags=N db=0 cmd=cluster|nodes user=default
id=7 addr=127.0.0.4:40003 laddr=127.0.0.1:7777 fd=11 name= age=30 idle=0 flags=N db=0 cmd=set user=default
id=8 addr=127.0.0.5:40004 laddr=127.0.0.1:7777 fd=12 name= age=30 idle=3 flags=N db=0 cmd=get user=default
`

func TestParseClientListAndBusy(t *testing.T) {
	conns := ParseClientList(clientList)
	if len(conns) != 5 {
		t.Fatalf("parsed %d connections, want 5", len(conns))
	}
	if diff := cmp.Diff(ClientConn{ID: "8", Addr: "127.0.0.5:40004", Flags: "N", Idle: 3 * time.Second, Cmd: "get"}, conns[4]); diff != "" {
		t.Errorf("connection 8 (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name  string
		quiet time.Duration
		want  []string
	}{
		{"quiet 1s: only the writer that just ran SET is busy (replica link, CLIENT LIST, CLUSTER NODES are not keyspace)", time.Second, []string{"7"}},
		{"quiet 5s: the GET 3s ago is busy too", 5 * time.Second, []string{"7", "8"}},
		{"quiet 3s: idle 3 proves only more than 2s, so the GET is busy", 3 * time.Second, []string{"7", "8"}},
		{"quiet 2s: idle 3 proves more than 2s, the GET is quiet", 2 * time.Second, []string{"7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range busyClients(conns, tc.quiet) {
				got = append(got, c.ID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("busy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuietIdle(t *testing.T) {
	for _, tc := range []struct {
		quiet, want time.Duration
	}{
		{0, time.Second},
		{500 * time.Millisecond, 2 * time.Second},
		{time.Second, 2 * time.Second},
		{1500 * time.Millisecond, 3 * time.Second},
		{5 * time.Second, 6 * time.Second},
	} {
		t.Run(fmt.Sprintf("quiet %s → idle ≥ %s", tc.quiet, tc.want), func(t *testing.T) {
			if got := quietIdle(tc.quiet); got != tc.want {
				t.Errorf("quietIdle(%s) = %s, want %s", tc.quiet, got, tc.want)
			}
		})
	}
}
