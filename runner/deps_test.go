package runner

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/locktest/locktest/impls"
)

// fakePath makes a directory holding empty executables named bins and
// makes it the whole PATH, hiding every installed program.
func fakePath(t *testing.T, bins ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, b := range bins {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

// TestDesignMissing: a design lacks exactly the server programs PATH does
// not hold (with their packages), the resource's Redis unless it keeps the
// data itself, and what its own check refuses.
func TestDesignMissing(t *testing.T) {
	sentinel := map[string]string{"redis-server": "redis-server", "redis-sentinel": "redis-sentinel"}
	refused := errors.New("lib:x needs /x, which is missing: apt-get install x")
	cases := []struct {
		name      string
		installed []string
		design    impls.Design
		want      map[string]string
		pkgs      []string
		check     error
	}{
		{"nothing installed", nil, impls.Design{Binaries: sentinel},
			sentinel, []string{"redis-sentinel", "redis-server"}, nil},
		{"the server, not Sentinel", []string{"redis-server"}, impls.Design{Binaries: sentinel},
			map[string]string{"redis-sentinel": "redis-sentinel"}, []string{"redis-sentinel"}, nil},
		{"all there", []string{"redis-server", "redis-sentinel"}, impls.Design{Binaries: sentinel},
			map[string]string{}, nil, nil},
		{"the resource's Redis", []string{"etcd"}, impls.Design{Binaries: map[string]string{"etcd": "etcd-server"}},
			map[string]string{"redis-server": "redis-server"}, []string{"redis-server"}, nil},
		{"data kept by the design", []string{"etcd"}, impls.Design{Binaries: map[string]string{"etcd": "etcd-server"}, GuardsWrites: true},
			map[string]string{}, nil, nil},
		{"its own check", []string{"redis-server"}, impls.Design{Check: func() error { return refused }},
			map[string]string{}, nil, refused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fakePath(t, tc.installed...)
			m := DesignMissing(tc.design)
			if !reflect.DeepEqual(m.Binaries, tc.want) || !reflect.DeepEqual(m.Packages(), tc.pkgs) || m.Check != tc.check {
				t.Errorf("missing %v, packages %v, check %v; want %v, %v, %v", m.Binaries, m.Packages(), m.Check, tc.want, tc.pkgs, tc.check)
			}
			if m.Ready() != (len(tc.want) == 0 && tc.check == nil) {
				t.Errorf("Ready() = %v with %v missing", m.Ready(), m)
			}
		})
	}
}
