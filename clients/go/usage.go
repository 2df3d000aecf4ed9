package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// settings are what the command line asks for.
type settings struct {
	target  string
	timeout time.Duration
}

// maxTimeout is the longest -timeout taken: a day, as the Python clients' --timeout.
const maxTimeout = 24 * time.Hour

// parseCommandLine reads the flags, each checked as the Python clients check theirs, into a
// usage error (main: exit status 2) that names the flag but never echoes its value, as the
// Python clients and the engine refuse an argument they do not know (engine_service/
// command_line.py). The flag package's own errors echo it ("invalid value \"s3cret\" for flag
// -timeout: parse error"), so -timeout is read as text and parsed here, and its messages go
// nowhere: the error returned stands for them. flag.ErrHelp for -h / -help. The FlagSet prints
// the usage on stderr.
func parseCommandLine(args []string) (settings, *flag.FlagSet, error) {
	flags := flag.NewFlagSet("cardgames-go", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	target := flags.String("target", "127.0.0.1:50051", "the engine's `host:port` (plaintext)")
	timeout := flags.String("timeout", "60s", "time allowed for the whole run, a Go `duration` (90s, 2m) above 0 and at most 24h")
	err := flags.Parse(args)
	flags.SetOutput(os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return settings{}, flags, err
	case err != nil && strings.HasPrefix(err.Error(), "bad flag syntax"):
		// "bad flag syntax: ---s3cret" shows the whole argument
		return settings{}, flags, errors.New("bad flag syntax: an argument begins with '---' or '-=' (not shown: it may hold a secret)")
	case err != nil: // an undefined flag (its name, not its =VALUE), or one without its value
		return settings{}, flags, err
	case flags.NArg() != 0:
		return settings{}, flags, errors.New(unrecognized(flags.Args()))
	}
	if strings.TrimSpace(*target) == "" {
		return settings{}, flags, errors.New("argument -target: the target is empty (host:port, e.g. 127.0.0.1:50051)")
	}
	if problem := targetProblem(*target); problem != "" {
		return settings{}, flags, fmt.Errorf("argument -target: the target %s (host:port, e.g. 127.0.0.1:50051; "+
			"the value is not shown)", problem)
	}
	run, err := time.ParseDuration(*timeout)
	if err != nil {
		return settings{}, flags, errors.New("argument -timeout: not a duration such as 90s or 2m (the value is not shown)")
	}
	if run <= 0 || run > maxTimeout {
		return settings{}, flags, errors.New("argument -timeout: must be a duration above 0 and at most 24h (the value is not shown)")
	}
	return settings{target: *target, timeout: run}, flags, nil
}

// targetProblem is what is wrong with a non-empty target as host:port, or "": grpc-go took
// an empty target, "host:" and "host:http" as given, and failed (or waited out -timeout on
// another port) as if the engine were down. As the Python clients check it
// (clients/cardgames_client.py, target_arg), except that the target is never shown.
func targetProblem(target string) string {
	_, port, err := net.SplitHostPort(target)
	if err != nil {
		return "is no host:port"
	}
	if port == "" {
		return "has no port after its ':'"
	}
	number, err := strconv.Atoi(port)
	if err != nil || strings.Trim(port, "0123456789") != "" || number < 1 || number > 65535 {
		return "has a port that is no number from 1 to 65535"
	}
	return ""
}

// unrecognized is the usage error for the arguments the flag package left unparsed (it stops
// at the first that is not a flag, so a flag after it is among them too): the flags are
// named, the values only counted, as the Python clients and the engine say it
// (engine_service/command_line.py). A stray word may be a secret pasted at the wrong place (a
// seat token), and the error line goes to a terminal or a CI log.
func unrecognized(args []string) string {
	var shown []string
	hidden := 0
	for _, arg := range args {
		name := ""
		if strings.HasPrefix(arg, "-") && arg != "-" {
			name, _, _ = strings.Cut(arg, "=") // -flag=VALUE
		}
		if name != "" {
			shown = append(shown, name)
		}
		if name != arg {
			hidden++
		}
	}
	switch {
	case hidden == 1:
		shown = append(shown, "(1 value not shown: it may hold a secret)")
	case hidden > 1:
		shown = append(shown, fmt.Sprintf("(%d values not shown: they may hold a secret)", hidden))
	}
	return "unrecognized arguments: " + strings.Join(shown, " ")
}
