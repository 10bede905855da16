package redistest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FlagMyselfMaster rewrites the nodes.conf in dir (a stopped replica's, or one about to be
// killed) as Redis 7.0 saves it after an UPDATE message about itself: the myself line's flags
// "myself,slave" become "myself,master" and its master "-". At its next start the node is a
// master without slots holding its old master's keys, which Redis's start-up check marks
// importing. It fails when no myself line is a replica's.
func FlagMyselfMaster(dir string) error {
	path := filepath.Join(dir, "nodes.conf")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := bytes.Split(b, []byte("\n"))
	edited := false
	for i, l := range lines {
		if f := strings.Fields(string(l)); len(f) > 3 && strings.HasPrefix(f[2], "myself,slave") {
			f[2], f[3] = "myself,master", "-"
			lines[i], edited = []byte(strings.Join(f, " ")), true
		}
	}
	if !edited {
		return fmt.Errorf("redistest: %s has no myself,slave line:\n%s", path, b)
	}
	return os.WriteFile(path, bytes.Join(lines, []byte("\n")), 0o644)
}
