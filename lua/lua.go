// Package lua embeds the Redis scripts of the hot path: one file per operation, named
// <noun>_<verb>.lua, each with a header naming its KEYS, ARGV, reply and error replies. A script names
// its KEYS and ARGV once, at the top, with the header's names (local seats, holds = KEYS[1], KEYS[2]);
// internal/redis's TestScriptHeaders holds each header against the keys and arguments Go builds, and
// TestScriptErrorCodes its error replies against the error table (ticketrush.Codes).
//
// Redis scripts have no includes, so this package gives them one: a line "--#include name" is replaced
// by lib/name.lua, local functions that several scripts share (the rate limit). The text Redis runs,
// and whose SHA1 EVALSHA sends, is Source's.
package lua

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed *.lua lib/*.lua
var files embed.FS

const include = "--#include "

// Source returns the text of the script name (without .lua), its includes expanded. It panics on an
// unknown name or include: the set of scripts is fixed at build time.
func Source(name string) string { return source(files, name) }

func source(fsys fs.FS, name string) string {
	b, err := fs.ReadFile(fsys, name+".lua")
	if err != nil {
		panic("lua: no script " + name)
	}
	lines := strings.SplitAfter(string(b), "\n")
	for i, line := range lines {
		if lib, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), include); ok {
			text, err := fs.ReadFile(fsys, "lib/"+lib+".lua")
			if err != nil {
				panic("lua: " + name + " includes " + lib + ", which lib/ does not have")
			}
			lines[i] = string(text)
		}
	}
	return strings.Join(lines, "")
}

// Names lists every embedded script (not the includes of lib/).
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, strings.TrimSuffix(e.Name(), ".lua"))
		}
	}
	return names
}
