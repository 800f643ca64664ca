package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// version is set at link time for releases
// (go build -ldflags "-X main.version=v1.2.3"); a build from a checkout
// answers the module version Go recorded, or "devel".
var version = ""

// versionText is what "mailhost version" prints: the version, the commit
// and its time when the build recorded them (a build from a git checkout
// does), whether the tree had uncommitted changes, and the Go release.
func versionText() string {
	info, ok := debug.ReadBuildInfo()
	v := version
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	goVersion := "unknown"
	var commit, when, modified string
	if ok {
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	out := "mailhost " + v + "\n"
	if commit != "" {
		out += "commit " + commit
		if modified == "true" {
			out += " (with uncommitted changes)"
		}
		out += "\n"
	}
	if when != "" {
		out += "built from the commit of " + when + "\n"
	}
	return out + "go " + goVersion + "\n"
}

func versionCommand(stdout io.Writer) int {
	fmt.Fprint(stdout, versionText())
	return 0
}
