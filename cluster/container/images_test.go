package container

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// An image's build context holds a Dockerfile FROM scratch whose entry
// point is the slot launcher, /tmp, the files at their paths (a file
// copied from elsewhere at its image path) and links as links.
func TestBuildContext(t *testing.T) {
	src := t.TempDir() + "/prog"
	if err := os.WriteFile(src, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buildContext(&buf, []file{{path: "/usr/bin/prog", from: src}, {path: "/usr/bin/alias", link: "prog"}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	var dockerfile string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
		if h.Name == "Dockerfile" {
			b, _ := io.ReadAll(tr)
			dockerfile = string(b)
		}
	}
	if want := "FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"" + SelfPath + "\", \"" + NodeExecCommand + "\", \"" + SlotSpec + "\"]\n"; dockerfile != want {
		t.Errorf("Dockerfile %q, want %q", dockerfile, want)
	}
	if h := got["rootfs/usr/bin/prog"]; h == nil || h.Size != 8 || h.Mode != 0o755 {
		t.Errorf("prog: %+v", h)
	}
	if h := got["rootfs/usr/bin/alias"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "prog" {
		t.Errorf("alias: %+v", h)
	}
	if h := got["rootfs/tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("tmp: %+v", h)
	}
}

// ldd's lines name libraries after "=>", the loader alone; vdso has no path.
func TestLddLine(t *testing.T) {
	for line, want := range map[string]string{
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)": "/lib/x86_64-linux-gnu/libc.so.6",
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f)":                  "/lib64/ld-linux-x86-64.so.2",
		"\tlinux-vdso.so.1 (0x00007ffc)":                            "",
	} {
		m := lddLine.FindStringSubmatch(line)
		got := ""
		if m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q → %q, want %q", line, got, want)
		}
	}
}
