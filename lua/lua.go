// Package lua embeds the Redis scripts of the hot path: one file per operation, named
// <noun>_<verb>.lua, each with a header naming its KEYS, ARGV, reply and error replies. A script names
// its KEYS and ARGV once, at the top, with the header's names (local seats, holds = KEYS[1], KEYS[2]);
// internal/redis's TestScriptHeaders holds each header against the keys and arguments Go builds, and
// TestScriptErrorCodes its error replies against the error table (ticketrush.Codes).
//
// Redis scripts have no includes, so this package gives them one: a line "--#include name" is replaced
// by lib/name.lua, local functions that several scripts share (the rate limit), once per script, and a
// lib may include another. The text Redis runs, and whose SHA1 EVALSHA sends, is Source's.
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
	return expand(fsys, name, string(b), map[string]bool{})
}

// expand replaces each include line of text with its lib file, itself expanded: a lib may include
// another (lib/hold.lua uses lib/open.lua's functions). Each lib is put in once, where it is first
// included; a later include of it is dropped, its functions being in scope already.
func expand(fsys fs.FS, name, text string, done map[string]bool) string {
	lines := strings.SplitAfter(text, "\n")
	for i, line := range lines {
		lib, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), include)
		if !ok {
			continue
		}
		if done[lib] {
			lines[i] = ""
			continue
		}
		done[lib] = true
		b, err := fs.ReadFile(fsys, "lib/"+lib+".lua")
		if err != nil {
			panic("lua: " + name + " includes " + lib + ", which lib/ does not have")
		}
		lines[i] = expand(fsys, name, string(b), done)
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
