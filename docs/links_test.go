// Package docs holds no code: its test keeps the documentation's links
// from rotting, because README.md sends readers into docs/ for nearly
// everything and a moved heading or page breaks that path silently.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink is an inline Markdown link or image: [text](target) or
// [text](target "title").
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// codeSpan is inline code, whose brackets are text, not links.
var codeSpan = regexp.MustCompile("`[^`]*`")

// htmlAnchor is an explicit anchor a page may set with raw HTML.
var htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)

// page is what a Markdown file offers and asks for.
type page struct {
	links   []string        // link targets, outside code
	anchors map[string]bool // the #fragments its headings and anchors define
}

// parse reads a Markdown page: its links and its anchors, skipping fenced
// code blocks (a "# comment" in a shell example is no heading).
func parse(text string) page {
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			p.anchors[m[1]] = true
		}
		if h, ok := heading(line); ok {
			slug := slugify(h)
			// A repeated heading gets -1, -2, … as on GitHub.
			if n := seen[slug]; n > 0 {
				p.anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				p.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			p.links = append(p.links, m[1])
		}
	}
	return p
}

// heading returns the text of an ATX heading line.
func heading(line string) (string, bool) {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || len(line) == level || line[level] != ' ' {
		return "", false
	}
	return strings.TrimSpace(line[level:]), true
}

// slugify is GitHub's anchor for a heading: lower case, every character
// but letters, digits, spaces, hyphens and underscores dropped, spaces
// turned into hyphens.
func slugify(h string) string {
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

// TestLinksResolve: every relative link in README.md and the pages under
// docs/ names a file of the repository, and every #anchor a heading (or
// HTML anchor) of the page it points to.
func TestLinksResolve(t *testing.T) {
	files := []string{"../README.md"}
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]page{}
	load := func(path string) (page, error) {
		if p, ok := pages[path]; ok {
			return p, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return page{}, err
		}
		p := parse(string(b))
		pages[path] = p
		return p, nil
	}
	checked := 0
	for _, file := range files {
		p, err := load(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, link := range p.links {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			checked++
			target, anchor, _ := strings.Cut(link, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s, which does not exist", file, link)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s links to %s: an anchor into a file that is not Markdown", file, link)
				continue
			}
			tp, err := load(path)
			if err != nil {
				t.Errorf("%s links to %s: %v", file, link, err)
				continue
			}
			if !tp.anchors[anchor] {
				t.Errorf("%s links to %s: %s has no heading with anchor #%s", file, link, path, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the parser is broken")
	}
}

// TestSlugify pins the anchors GitHub gives headings like those of these pages.
func TestSlugify(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Servers you run: `--servers` and `--server-pids`", "servers-you-run---servers-and---server-pids"},
		{"The demo, in full", "the-demo-in-full"},
		{"stop_early", "stop_early"},
		{"Depending on locktest before it is published", "depending-on-locktest-before-it-is-published"},
		{"Checkpoints: where a fault can stop your client", "checkpoints-where-a-fault-can-stop-your-client"},
	} {
		if got := slugify(c.heading); got != c.want {
			t.Errorf("slugify(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}
