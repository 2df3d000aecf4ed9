package main

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
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

// A bad -target or -timeout is a usage error naming the flag, never its value (the flag
// package echoed a bad -timeout: "invalid value \"s3cret\" for flag -timeout").
func TestBadFlagValuesAreRefusedUnshown(t *testing.T) {
	const (
		noHostPort = "argument -target: the target is no host:port (host:port, e.g. 127.0.0.1:50051; the value is not shown)"
		noPort     = "argument -target: the target has no port after its ':' (host:port, e.g. 127.0.0.1:50051; the value is not shown)"
		badPort    = "argument -target: the target has a port that is no number from 1 to 65535 (host:port, e.g. " +
			"127.0.0.1:50051; the value is not shown)"
	)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-timeout", "s3cret"}, "argument -timeout: not a duration such as 90s or 2m (the value is not shown)"},
		{[]string{"-timeout=10"}, "argument -timeout: not a duration such as 90s or 2m (the value is not shown)"},
		{[]string{"-timeout", "-5s"}, "argument -timeout: must be a duration above 0 and at most 24h (the value is not shown)"},
		{[]string{"-timeout", "0s"}, "argument -timeout: must be a duration above 0 and at most 24h (the value is not shown)"},
		{[]string{"-timeout", "25h"}, "argument -timeout: must be a duration above 0 and at most 24h (the value is not shown)"},
		{[]string{"-target", ""}, "argument -target: the target is empty (host:port, e.g. 127.0.0.1:50051)"},
		{[]string{"-target", " "}, "argument -target: the target is empty (host:port, e.g. 127.0.0.1:50051)"},
		{[]string{"-target", "s3cret"}, noHostPort},
		{[]string{"-target", "s3cret:"}, noPort},
		{[]string{"-target", "s3cret:http"}, badPort},
		{[]string{"-target", "s3cret:-1"}, badPort},
		{[]string{"-target", "s3cret:+1"}, badPort},
		{[]string{"-target", "s3cret:0"}, badPort},
		{[]string{"-target", "s3cret:65536"}, badPort},
		{[]string{"---s3cret"}, "bad flag syntax: an argument begins with '---' or '-=' (not shown: it may hold a secret)"},
		{[]string{"-=s3cret"}, "bad flag syntax: an argument begins with '---' or '-=' (not shown: it may hold a secret)"},
		{[]string{"-bogus=s3cret"}, "flag provided but not defined: -bogus"},
		{[]string{"s3cret"}, "unrecognized arguments: (1 value not shown: it may hold a secret)"},
	} {
		_, _, err := parseCommandLine(c.args)
		if err == nil || err.Error() != c.want {
			t.Errorf("parseCommandLine(%q) = %v, want %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("parseCommandLine(%q) shows a value: %q", c.args, err)
		}
	}
}

func TestGoodFlagValuesAreTaken(t *testing.T) {
	for _, c := range []struct {
		args   []string
		target string
		run    time.Duration
	}{
		{nil, "127.0.0.1:50051", 60 * time.Second},
		{[]string{"-target", "[::1]:65535", "-timeout", "90s"}, "[::1]:65535", 90 * time.Second},
		{[]string{"--target=engine.test:1", "--timeout=24h"}, "engine.test:1", 24 * time.Hour},
		{[]string{"-target", ":50051"}, ":50051", 60 * time.Second}, // grpc-go dials localhost
	} {
		got, _, err := parseCommandLine(c.args)
		if err != nil || got.target != c.target || got.timeout != c.run {
			t.Errorf("parseCommandLine(%q) = %+v, %v; want %s, %s", c.args, got, err, c.target, c.run)
		}
	}
	if _, _, err := parseCommandLine([]string{"-help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-help: %v, want flag.ErrHelp", err)
	}
}
