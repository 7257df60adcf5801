// Package lua embeds the Redis scripts of the hot path: one file per operation, named
// <noun>_<verb>.lua, each with a header naming its KEYS, ARGV, reply and error replies. A script names
// its KEYS and ARGV once, at the top, with the header's names (local seats, holds = KEYS[1], KEYS[2]);
// internal/redis's TestScriptHeaders holds each header against the keys and arguments Go builds, and
// TestScriptErrorCodes its error replies against the error table (ticketrush.Codes).
package lua

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed *.lua
var files embed.FS

// Source returns the text of the script name (without .lua). It panics on an unknown name: the set of
// scripts is fixed at build time.
func Source(name string) string {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic("lua: no script " + name)
	}
	return string(b)
}

// Names lists every embedded script.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".lua"))
	}
	return names
}
