// Package docs holds the check that the documentation's references resolve: a link between the
// Markdown files reaches a file, and its #anchor a heading there; a section named in quotes after a
// document ("docs/scaleout.md, "Settings"", in a comment or a doc) is a heading or a bold label of it.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// a document, then a section of it in quotes: `docs/faults.md, "Readiness"`, `(durability.md), "Replica waits"`
	sectionRef = regexp.MustCompile(`((?:[\w.-]+/)*[\w-]+\.md)\)?,\s+"([^"]+)"`)
	// a line break inside a comment or a paragraph, with the next line's comment leader
	lineBreak = regexp.MustCompile(`[ \t]*\n[ \t]*(?:(?://|--|#)[ \t]*)?`)
	anchorID  = regexp.MustCompile(`<a id="([^"]+)">`)
)

// doc is a Markdown file's headings, as written and as GitHub's anchors, and its text, as written and
// with its line breaks as spaces.
type doc struct {
	headings   []string
	anchors    map[string]bool
	text, flat string
}

func readDoc(path string) (doc, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return doc{}, false
	}
	d := doc{anchors: map[string]bool{}, text: string(b), flat: lineBreak.ReplaceAllString(string(b), " ")}
	fenced := false
	for _, line := range strings.Split(d.text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			h := strings.TrimSpace(strings.TrimLeft(line, "#"))
			d.headings = append(d.headings, h)
			d.anchors[slug(h)] = true
		}
	}
	for _, m := range anchorID.FindAllStringSubmatch(d.text, -1) {
		d.anchors[m[1]] = true
	}
	return d, true
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// names reports whether section names one of d's headings (the whole of it, or its part before a colon
// or a parenthesis) or a bold label in its text.
func (d doc) names(section string) bool {
	for _, h := range d.headings {
		h = strings.ReplaceAll(h, "`", "")
		if h == section || strings.HasPrefix(h, section+":") || strings.HasPrefix(h, section+" (") {
			return true
		}
	}
	return strings.Contains(d.flat, "**"+section)
}

// repoFiles is every file of the repository below root whose references are checked.
func repoFiles(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case ".git", ".data", "node_modules", "bin", "out", "screenshots":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".lua", ".sql", ".sh", ".md", ".yaml", ".yml", ".js":
			out = append(out, p)
		default:
			if e.Name() == "Makefile" {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLinksResolve: every relative link of a Markdown file reaches a file or folder of the repository,
// and its anchor, if any, a heading or an <a id> of that file.
func TestLinksResolve(t *testing.T) {
	root := ".."
	n := 0
	for _, p := range repoFiles(t, root) {
		if filepath.Ext(p) != ".md" {
			continue
		}
		self, _ := readDoc(p)
		for _, m := range mdLink.FindAllStringSubmatch(self.text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, anchor, _ := strings.Cut(target, "#")
			d := self
			if path != "" {
				full := filepath.Join(filepath.Dir(p), path)
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s: link %q: no such file", p, target)
					continue
				}
				if anchor == "" || filepath.Ext(full) != ".md" {
					continue
				}
				d, _ = readDoc(full)
			}
			if anchor != "" && !d.anchors[anchor] {
				t.Errorf("%s: link %q: no heading has that anchor", p, target)
			}
		}
	}
	if n == 0 {
		t.Fatal("no links found: the walk read nothing")
	}
}

// TestSectionsNamedExist: a section named in quotes after a document, in any file of the repository, is
// a heading of that document (or the part of one before its colon) or a bold label in it.
func TestSectionsNamedExist(t *testing.T) {
	root := ".."
	docs := map[string]doc{}
	find := func(from, name string) (doc, bool) {
		for _, dir := range []string{filepath.Dir(from), filepath.Join(root, "docs"), root} {
			full := filepath.Join(dir, name)
			if d, ok := docs[full]; ok {
				return d, true
			}
			if d, ok := readDoc(full); ok {
				docs[full] = d
				return d, true
			}
		}
		return doc{}, false
	}
	n := 0
	for _, p := range repoFiles(t, root) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := lineBreak.ReplaceAllString(string(b), " ")
		for _, m := range sectionRef.FindAllStringSubmatch(text, -1) {
			d, ok := find(p, m[1])
			if !ok {
				continue // a file outside the repository, or a name in a test's data
			}
			n++
			if !d.names(m[2]) {
				t.Errorf("%s: %s, %q: no such heading or bold label", p, m[1], m[2])
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d section references found: the pattern no longer matches how the docs cite", n)
	}
}
