package main

import (
	"strings"
	"testing"
)

// A stray argument is never echoed: only the flags among the leftovers are named.
func TestUnrecognizedNamesFlagsButNoValue(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"s3cret"}, "unrecognized arguments: (1 value not shown: it may hold a secret)"},
		{[]string{"s3cret", "--target", "h:1"}, "unrecognized arguments: --target (2 values not shown: they may hold a secret)"},
		{[]string{"x", "-timeout=s3cret"}, "unrecognized arguments: -timeout (2 values not shown: they may hold a secret)"},
		{[]string{"x", "--quiet"}, "unrecognized arguments: --quiet (1 value not shown: it may hold a secret)"},
		{[]string{"-"}, "unrecognized arguments: (1 value not shown: it may hold a secret)"},
	} {
		got := unrecognized(c.args)
		if got != c.want {
			t.Errorf("unrecognized(%q) = %q, want %q", c.args, got, c.want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "h:1") {
			t.Errorf("unrecognized(%q) shows a value: %q", c.args, got)
		}
	}
}
