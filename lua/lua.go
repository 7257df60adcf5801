// Package lua embeds the Redis scripts of the hot path: one file per operation, named
// <noun>_<verb>.lua, each with a header naming its KEYS, ARGV, reply and error replies.
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
