package main

import (
	"fmt"
	"strings"
)

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
