package cluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ServerVersions returns the version of each server binary among
// binaries, by the server's name ("redis-server": "7.0.15"; ZooKeeper,
// run by java, as "zookeeper"), so that a result says which servers it was
// measured on. Binaries that are no server (a compiler, the user's own
// program) and servers whose version cannot be read are left out. Each is
// asked once per process: a suite does not re-run them per scenario.
func ServerVersions(binaries []string) map[string]string {
	out := map[string]string{}
	for _, b := range binaries {
		if name, v := serverVersion(b); v != "" {
			out[name] = v
		}
	}
	return out
}

var versions sync.Map // binary → versionOnce

type versionOnce struct {
	once          sync.Once
	name, version string
}

func serverVersion(binary string) (name, version string) {
	e, _ := versions.LoadOrStore(binary, &versionOnce{})
	v := e.(*versionOnce)
	v.once.Do(func() { v.name, v.version = askVersion(binary) })
	return v.name, v.version
}

// versionNumber is the first dotted number a server prints about itself:
// "Redis server v=7.0.15 sha=…", "etcd Version: 3.4.23",
// "postgres (PostgreSQL) 15.18 (Debian …)", "PgBouncer 1.18.0",
// "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 …", "zookeeper-3.8.0.jar".
var versionNumber = regexp.MustCompile(`\d+\.\d+(\.\d+)*`)

func askVersion(binary string) (name, version string) {
	switch binary {
	case "redis-server", "redis-sentinel", "etcd", "postgres", "pgbouncer", "mariadbd":
		path, err := LookBinary(binary, "")
		if err != nil {
			return binary, ""
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "--version").Output()
		if err != nil {
			return binary, ""
		}
		first, _, _ := strings.Cut(string(out), "\n")
		return binary, versionNumber.FindString(first)
	case "java":
		// Debian links the jar under its versioned name too.
		jars, _ := filepath.Glob(filepath.Join(filepath.Dir(zooKeeperJar), "zookeeper-[0-9]*.jar"))
		if len(jars) == 0 {
			return "zookeeper", ""
		}
		return "zookeeper", versionNumber.FindString(filepath.Base(jars[0]))
	default:
		return binary, ""
	}
}
