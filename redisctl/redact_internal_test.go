package redisctl

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecretsNeverPrinted(t *testing.T) {
	const pw = "hunter2-Pw"
	c, err := New(Options{Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	inner := errors.New("server said: bad password " + pw)
	tests := []struct {
		name string
		text string
		want string // what must remain
	}{
		{"errf with the password in an argument: redacted", c.errf("op %s: %w", "x", inner).Error(), "redisctl: op x: server said: bad password <redacted>"},
		{"wrapf around an error holding the password: redacted", c.wrapf(inner, "failover %s", "a:1").Error(), "redisctl: failover a:1: server said: bad password <redacted>"},
		{"Options with %v: redacted", fmt.Sprintf("%v", c.Options()), `Password:"<redacted>"`},
		{"Options with %+v: redacted", fmt.Sprintf("%+v", c.Options()), `Password:"<redacted>"`},
		{"Options with %#v: redacted", fmt.Sprintf("%#v", c.Options()), `Password:"<redacted>"`},
		{"*Options with %v: redacted", fmt.Sprintf("%v", &Options{Password: pw}), `Password:"<redacted>"`},
		{"Options inside a struct with %+v: redacted", fmt.Sprintf("%+v", struct{ O Options }{Options{Password: pw}}), `Password:"<redacted>"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.text, pw) {
				t.Fatalf("password in %q", tc.text)
			}
			if !strings.Contains(tc.text, tc.want) {
				t.Errorf("%q lacks %q", tc.text, tc.want)
			}
		})
	}
	// Redacted errors still unwrap to their cause.
	if err := c.errf("op: %w", inner); !errors.Is(err, inner) {
		t.Errorf("redacted error does not wrap its cause")
	}
	plain := errors.New("no secret here")
	if diff := cmp.Diff(plain.Error(), redactErr(plain, pw).Error()); diff != "" {
		t.Errorf("error without the password changed (-want +got):\n%s", diff)
	}
}
