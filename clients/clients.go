// Package clients registers the lock libraries teams ship as designs named
// lib:NAME: each is the exec design (docs/protocol.md) around a client of a
// few dozen lines in this directory that calls the real library and holds no
// lock logic of its own, with the servers the library talks to preset. The
// clients run from the source tree: the directory is found from
// LOCKTEST_CLIENTS, or above the directory locktest runs in, or above its
// executable.
package clients

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/lock"
)

// Prefix marks a design that is a shipped library rather than one of
// locktest's own lock designs.
const Prefix = "lib:"

// library is one shipped lock library and the client that speaks for it.
type library struct {
	name        string
	description string
	// servers is the registered design whose servers the library uses.
	servers string
	// pkg is the Debian package whose version the listing shows.
	pkg string
	// argv is the client's command line; paths relative to the clients
	// directory start with "./".
	argv []string
	// needs are the files the client needs → how to get each, checked
	// before anything starts.
	needs  map[string]string
	renews bool
}

var libraries = []library{
	{
		name: "redis-py",
		description: "redis-py's Lock (Python): SET NX PX with polling, Lua compare-and-delete release and extend; " +
			"one Redis, no fencing",
		servers: "redis-single",
		pkg:     "python3-redis",
		argv:    []string{"/usr/bin/python3", "./redis-py/lock.py"},
		needs: map[string]string{"/usr/bin/python3": "apt-get install python3",
			"/usr/lib/python3/dist-packages/redis/__init__.py": "apt-get install python3-redis"},
		renews: true,
	},
	{
		name: "kazoo",
		description: "Kazoo's Lock recipe (Python) on 3-node ZooKeeper: ephemeral-sequential znode, " +
			"session timeout = --ttl, no fencing",
		servers: "zookeeper",
		pkg:     "python3-kazoo",
		argv:    []string{"/usr/bin/python3", "./kazoo/lock.py"},
		needs: map[string]string{"/usr/bin/python3": "apt-get install python3",
			"/usr/lib/python3/dist-packages/kazoo/__init__.py": "apt-get install python3-kazoo"},
	},
	{
		name: "curator",
		description: "Apache Curator's InterProcessMutex (Java) on 3-node ZooKeeper: ephemeral-sequential znode, " +
			"session timeout = --ttl, no fencing",
		servers: "zookeeper",
		pkg:     "libcurator-recipes-java",
		argv:    []string{"./curator/run"},
		needs: map[string]string{
			"/usr/share/java/curator-recipes.jar": "apt-get install libcurator-recipes-java",
			"./curator/classes/LockClient.class":  "run clients/curator/build (scripts/install-deps does)",
		},
	},
	{
		name: "python-etcd3",
		description: "python-etcd3's Lock (Python) on 3-node etcd: a transaction creating the key with a lease of --ttl " +
			"(whole seconds), retried on a watch; renew refreshes the lease; dials one member, no fencing",
		servers: "etcd",
		pkg:     "python3-etcd3",
		argv:    []string{"/usr/bin/python3", "./python-etcd3/lock.py"},
		needs: map[string]string{"/usr/bin/python3": "apt-get install python3",
			"/usr/lib/python3/dist-packages/etcd3/__init__.py": "apt-get install python3-etcd3"},
		renews: true,
	},
	toozLibrary("redis", "redis-single", "a Redis key with a timeout (lock_timeout = --ttl), kept alive by the coordinator's heartbeat; one Redis"),
	toozLibrary("zookeeper", "zookeeper", "Kazoo's Lock under tooz on 3-node ZooKeeper: ephemeral znode, session timeout = --ttl"),
	toozLibrary("etcd3", "etcd", "python-etcd3's Lock over gRPC with a lease of --ttl kept alive by the heartbeat; dials one member of 3-node etcd"),
	toozLibrary("postgresql", "postgres-advisory", "a PostgreSQL session advisory lock (pg_try_advisory_lock), held while the connection lives",
		"/usr/lib/python3/dist-packages/psycopg2/__init__.py", "apt-get install python3-psycopg2"),
	toozLibrary("mysql", "mariadb-getlock", "MariaDB GET_LOCK of a session (PyMySQL), held while the connection lives"),
	toozLibrary("memcached", "memcached", "an item added with an expiry of --ttl (whole seconds), kept alive by the "+
		"coordinator's heartbeat; one memcached, a cache that evicts when full",
		"/usr/lib/python3/dist-packages/pymemcache/__init__.py", "apt-get install python3-pymemcache"),
}

// toozLibrary is OpenStack tooz's lock over one of its backends: the same
// application code, whose safety the backend decides.
// needs adds a file and how to get it, for a backend's own driver.
func toozLibrary(backend, servers, what string, needs ...string) library {
	lib := library{
		name:        "tooz-" + backend,
		description: "OpenStack tooz's lock (Python) over " + backend + ": " + what + "; no fencing",
		servers:     servers,
		pkg:         "python3-tooz",
		argv:        []string{"/usr/bin/python3", "./tooz/lock.py", backend},
		needs: map[string]string{"/usr/bin/python3": "apt-get install python3",
			"/usr/lib/python3/dist-packages/tooz/__init__.py": "apt-get install python3-tooz"},
	}
	for i := 0; i+1 < len(needs); i += 2 {
		lib.needs[needs[i]] = needs[i+1]
	}
	return lib
}

func init() {
	for _, lib := range libraries {
		impls.Register(lib.design())
	}
}

// design is the exec design with the library's client and servers preset.
func (lib library) design() impls.Design {
	d, err := impls.ExecDesign(lib.argv[0], lib.servers)
	if err != nil {
		panic(fmt.Sprintf("library %s: %v", lib.name, err)) // a wrong table entry
	}
	runProgram := d.New
	d.Name = Prefix + lib.name
	d.Description = lib.description
	d.Renews = lib.renews
	d.Version = lib.version
	d.Check = func() error {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
		_, err = lib.command(wd)
		return err
	}
	d.New = func(cfg lock.Config) (lock.Lock, error) {
		cmd, err := lib.command(cfg.ExecDir)
		if err != nil {
			return nil, lock.Broken(err)
		}
		cfg.ExecCmd = cmd
		return runProgram(cfg)
	}
	// The client runs on the host, beside the worker, even when the servers
	// run in containers: it is checked by command, not as a server binary.
	delete(d.Binaries, lib.argv[0])
	return d
}

// version reads the installed package's version, at the time of asking.
func (lib library) version() string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", lib.pkg).Output()
	if err != nil || len(out) == 0 {
		return lib.pkg + " not installed"
	}
	return lib.pkg + " " + string(out)
}

// command returns the client's command line with absolute paths, after
// checking that everything it needs is there. wd is where locktest runs.
func (lib library) command(wd string) (string, error) {
	dir, err := clientsDir(wd, lib.argv)
	if err != nil {
		return "", fmt.Errorf("%s%s: %w", Prefix, lib.name, err)
	}
	abs := func(p string) string {
		if strings.HasPrefix(p, "./") {
			return filepath.Join(dir, p)
		}
		return p
	}
	for f, fix := range lib.needs {
		if _, err := os.Stat(abs(f)); err != nil {
			return "", fmt.Errorf("%s%s needs %s, which is missing: %s", Prefix, lib.name, abs(f), fix)
		}
	}
	words := make([]string, len(lib.argv))
	for i, a := range lib.argv {
		words[i] = "'" + abs(a) + "'" // quoted for impls.ExecArgs
	}
	return strings.Join(words, " "), nil
}

// clientsDir finds the directory holding the client's files: named by
// LOCKTEST_CLIENTS, or above wd, or above the locktest executable.
func clientsDir(wd string, argv []string) (string, error) {
	var local []string
	for _, a := range argv {
		if strings.HasPrefix(a, "./") {
			local = append(local, a)
		}
	}
	holds := func(dir string) bool {
		for _, f := range local {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("LOCKTEST_CLIENTS"); d != "" {
		if !holds(d) {
			return "", fmt.Errorf("LOCKTEST_CLIENTS=%s does not hold %s: point it at the clients directory of the locktest sources", d, local)
		}
		return filepath.Abs(d)
	}
	starts := []string{wd}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		for d := s; d != ""; {
			if c := filepath.Join(d, "clients"); holds(c) {
				return c, nil
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	return "", errors.New("its client is not found: run locktest inside its source tree, or set LOCKTEST_CLIENTS to the sources' clients directory")
}
