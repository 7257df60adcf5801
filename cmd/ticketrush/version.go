package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// buildVersion is what the binary knows of its own build, from runtime/debug.ReadBuildInfo: the module
// version ("(devel)" for a build from a work tree), the VCS commit it was built from and whether the tree
// had changes, and the Go version.
type buildVersion struct {
	Version  string
	Commit   string // "unknown" when the build did not stamp it (go test, go run, -buildvcs=false)
	Time     string // the commit's time, RFC 3339, when stamped
	Modified bool
	Go       string
}

// commit is set by `make build` (-ldflags -X main.commit=...) for the builds Go does not stamp itself:
// Go stamps vcs.revision only when the module sits in a repository whose .git is a directory, so a
// build in a git worktree or from a source archive has none.
var commit string

func readVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	return versionOf(bi, ok, commit)
}

// versionOf reads bi; the build info's own VCS stamp wins over the commit given at link time.
func versionOf(bi *debug.BuildInfo, ok bool, linked string) buildVersion {
	v := buildVersion{Version: "(devel)", Commit: "unknown", Go: runtime.Version()}
	if linked != "" {
		v.Commit = linked
	}
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v buildVersion) String() string {
	commit := v.Commit
	if v.Modified {
		commit += " (with uncommitted changes)"
	}
	if v.Time != "" {
		commit += " " + v.Time
	}
	return fmt.Sprintf("ticketrush %s\ncommit %s\n%s\n", v.Version, commit, v.Go)
}
