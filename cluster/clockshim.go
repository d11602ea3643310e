package cluster

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shimSource is the LD_PRELOAD shim that shifts a server's wall clock. It
// ships inside the binary so a run needs only a C compiler, not the source
// tree.
//
//go:embed clockshim/shim.c
var shimSource []byte

// clockFileEnv names the offset file for the shim.
const clockFileEnv = "LOCKTEST_CLOCK_FILE"

// CompilerBinary checks that a C compiler is installed: clock faults build
// the shim with it.
func CompilerBinary() (string, error) { return LookBinary("cc", "gcc") }

// BuildClockShim compiles the shim into dir (a cache shared by runs) unless
// a build of the same source is already there, and returns its path.
func BuildClockShim(dir string) (string, error) {
	cc, err := CompilerBinary()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(shimSource)
	out := filepath.Join(dir, "clockshim-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("clock shim cache: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("clock shim cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "shim.c")
	if err := os.WriteFile(src, shimSource, 0o644); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	so := filepath.Join(tmp, "shim.so")
	if msg, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", so, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build clock shim with %s: %w: %s", cc, err, msg)
	}
	// Rename is atomic: concurrent runs each build and one wins.
	if err := os.Rename(so, out); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	return out, nil
}

// ShimCacheDir is where BuildClockShim keeps its builds by default.
func ShimCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "locktest")
}

// NodeClock moves one server's wall clock. The server reads it through the
// shim, which maps the same 8-byte file; a store here is seen by the
// server's next clock read. The file outlives restarts of the node, as a
// machine's skewed clock outlives a crash of its server.
type NodeClock struct {
	path string
	mu   sync.Mutex
	mem  []byte
	// mirror, when set, is given every offset too: a server on another
	// host reads a copy of the file there (Mirror).
	mirror func(time.Duration) error
}

// Path is the offset file the server's shim maps (LOCKTEST_CLOCK_FILE).
func (c *NodeClock) Path() string { return c.path }

// Mirror makes SetOffset pass every offset to f as well, after storing it
// here: a backend whose servers run on other hosts (cluster/remote) keeps
// the host's copy of the file in step. An error of f is SetOffset's.
func (c *NodeClock) Mirror(f func(time.Duration) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mirror = f
}

func newNodeClock(path string) (*NodeClock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(8); err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map clock file: %w", err)
	}
	return &NodeClock{path: path, mem: mem}, nil
}

// word is the mapped offset; the mapping is page-aligned, so the 8-byte
// atomic store is never torn for the shim's atomic load.
func (c *NodeClock) word() *int64 { return (*int64)(unsafe.Pointer(&c.mem[0])) }

// SetOffset shifts the server's wall clock by d from the true time.
func (c *NodeClock) SetOffset(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return errors.New("clock " + c.path + " is closed")
	}
	atomic.StoreInt64(c.word(), int64(d))
	if c.mirror != nil {
		return c.mirror(d)
	}
	return nil
}

// Offset returns the current shift.
func (c *NodeClock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return 0
	}
	return time.Duration(atomic.LoadInt64(c.word()))
}

func (c *NodeClock) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem != nil {
		_ = unix.Munmap(c.mem)
		c.mem = nil
	}
}
