package observe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRedisNodes checks the --redis-nodes files: one file or a directory of them, each named
// <namespace>_<cluster>[.ext], holding what CLUSTER NODES prints.
func TestLoadRedisNodes(t *testing.T) {
	real, err := os.ReadFile("../../redisctl/testdata/clusternodes/redis7.0.15-master.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(real)), "\n")
	// A master's line with its slots replaced.
	withSlots := func(line, slots string) string {
		f := strings.Fields(line)
		return strings.Join(append(f[:8:8], slots), " ")
	}
	master := ""
	for _, l := range lines {
		if strings.Contains(l, "master") && len(strings.Fields(l)) > 8 {
			master = l
			break
		}
	}
	otherMaster := ""
	for _, l := range lines {
		if l != master && strings.Contains(l, "master") && len(strings.Fields(l)) > 8 {
			otherMaster = l
			break
		}
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string // name → content, in a directory
		single  string            // when set, that file alone is given
		want    map[string]int    // cluster key → nodes
		wantErr string
	}{
		{name: "a directory of two clusters' files → both, by cluster", files: map[string]string{"redis_rc.txt": string(real), "other_rc2": string(real), ".hidden": "x"},
			want: map[string]int{"redis/rc": 6, "other/rc2": 6}},
		{name: "one file → its cluster", files: map[string]string{"redis_my-release.nodes": string(real)}, single: "redis_my-release.nodes", want: map[string]int{"redis/my-release": 6}},
		{name: "a file not named <namespace>_<cluster> → error naming it", files: map[string]string{"rc.txt": string(real)}, wantErr: "rc.txt: the file name must be <namespace>_<cluster>[.ext]"},
		{name: "a namespace that is not one → error", files: map[string]string{"Redis_rc.txt": string(real)}, wantErr: `Redis_rc.txt: namespace "Redis" of the file name`},
		{name: "two files for one cluster → error", files: map[string]string{"redis_rc.txt": string(real), "redis_rc.old": string(real)}, wantErr: "cluster redis/rc already read from"},
		{name: "not CLUSTER NODES output → error naming the file", files: map[string]string{"redis_rc.txt": "hello world\n"}, wantErr: "redis_rc.txt: redisctl: CLUSTER NODES"},
		{name: "an empty file → error", files: map[string]string{"redis_rc.txt": "\n"}, wantErr: "redis_rc.txt: no node"},
		{name: "an empty directory → error", files: map[string]string{}, wantErr: "holds no file"},
		{name: "a node ID twice → error naming it and both lines", files: map[string]string{"redis_rc.txt": string(real) + lines[0] + "\n"},
			wantErr: "node " + strings.Fields(lines[0])[0] + " on lines 1 and 7: a node ID is listed once"},
		{name: "two masters serving one slot → error naming both ranges", files: map[string]string{"redis_rc.txt": withSlots(master, "0-100") + "\n" + withSlots(otherMaster, "100-200") + "\n"},
			wantErr: "slots 0-100 (line 1, node " + strings.Fields(master)[0] + ") and 100-200 (line 2, node " + strings.Fields(otherMaster)[0] + ") overlap"},
		{name: "a range inside another, after a third → error", files: map[string]string{"redis_rc.txt": withSlots(master, "0-1000") + "\n" + withSlots(otherMaster, "10-20 500-600") + "\n"},
			wantErr: "slots 0-1000 (line 1, node " + strings.Fields(master)[0] + ") and 500-600 (line 2"},
		{name: "a file over 16 MiB → error naming the limit", files: map[string]string{"redis_rc.txt": string(real) + strings.Repeat("\n", MaxRedisNodesBytes)},
			wantErr: "redis_rc.txt: larger than 16 MiB, the most a CLUSTER NODES file may hold"},
		{name: "two myself lines → error naming the lines", files: map[string]string{"redis_rc.txt": withSlots(master, "0-100") + "\n" + strings.Replace(withSlots(otherMaster, "101-200"), " master ", " myself,master ", 1) + "\n" + strings.Replace(lines[0], "master", "myself,master", 1) + "\n"},
			wantErr: "a second myself line"},
		{name: "adjacent ranges → no error", files: map[string]string{"redis_rc.txt": withSlots(master, "0-100") + "\n" + withSlots(otherMaster, "101-200") + "\n"},
			want: map[string]int{"redis/rc": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := dir
			if tc.single != "" {
				path = filepath.Join(dir, tc.single)
			}
			got, err := LoadRedisNodes(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for k, nodes := range got {
				counts[k] = len(nodes)
			}
			if len(counts) != len(tc.want) {
				t.Fatalf("clusters %v, want %v", counts, tc.want)
			}
			for k, n := range tc.want {
				if counts[k] != n {
					t.Errorf("%s: %d nodes, want %d", k, counts[k], n)
				}
			}
		})
	}
}
