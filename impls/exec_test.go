package impls

import (
	"slices"
	"strings"
	"testing"
)

func TestExecArgs(t *testing.T) {
	cases := []struct {
		cmd     string
		want    []string
		wantErr string
	}{
		{"python3 mylock.py", []string{"python3", "mylock.py"}, ""},
		{"  java  -jar 'my lock.jar'\t--x ", []string{"java", "-jar", "my lock.jar", "--x"}, ""},
		{`node "a \"b\" c" d\ e`, []string{"node", `a "b" c`, "d e"}, ""},
		{`sh -c 'echo $HOME'`, []string{"sh", "-c", "echo $HOME"}, ""},
		{`x "" ''`, []string{"x", "", ""}, ""},
		{`x "a\n"`, []string{"x", `a\n`}, ""},
		{"", nil, "empty"},
		{"   ", nil, "empty"},
		{`python3 "x`, nil, "unbalanced \" quote"},
		{`python3 'x`, nil, "unbalanced ' quote"},
		{`python3 x\`, nil, "lone backslash"},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			got, err := ExecArgs(tc.cmd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestExecDesignTakesServers(t *testing.T) {
	d, err := ExecDesign("python3 x.py", "redis-single")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != ExecName || d.Deploy == nil || !d.Renews || d.Binaries["redis-server"] == "" {
		t.Fatalf("exec on redis-single servers: %+v", d)
	}
	if p, ok := d.Binaries["python3"]; !ok || p != "" {
		t.Fatalf("the program is not checked before the run: %v", d.Binaries)
	}
	if _, ok := mustLookup("redis-single").Binaries["python3"]; ok {
		t.Fatal("ExecDesign changed the registered design's binaries")
	}
}

func mustLookup(name string) Design {
	d, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return d
}
