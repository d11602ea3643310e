package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Options say how to reach the hosts of --nodes.
type Options struct {
	// Hosts are "host", "host:port", "user@host" or "user@host:port",
	// in the order nodes are handed to them.
	Hosts []string
	// User is the login for hosts that name none (default: $USER).
	User string
	// KeyFile is a private key; without it the agent at SSH_AUTH_SOCK
	// signs.
	KeyFile string
	// KnownHosts is the known_hosts file host keys are checked against
	// (default ~/.ssh/known_hosts). A host whose key is not there is
	// refused: locktest never trusts on first use.
	KnownHosts string
	// Dir is where runs keep their files on the hosts (default
	// DefaultDir); each run has a directory of its own under it.
	Dir string
	// Timeout bounds the connection to one host (default 10 s).
	Timeout time.Duration
}

// DefaultDir is where runs keep their files on a host by default.
const DefaultDir = "/tmp/locktest"

// Host is one host of --nodes and its SSH connection.
type Host struct {
	// Name is the host as --nodes gives it, without user and port.
	Name string
	// Addr is the address dialed (host:port).
	Addr string
	// IP is the host's address as the control host reaches it: servers
	// on it are dialed there.
	IP string
	// LocalIP is the control host's address on the connection: the one
	// the host reaches the control host at (its links).
	LocalIP string
	user    string
	client  *ssh.Client
	mu      sync.Mutex // serialises nothing but Close
	// sessions holds a place per session open: sshd refuses more than
	// MaxSessions (10 by default) on one connection, and a fault acts on
	// many links and nodes at once.
	sessions chan struct{}
}

// maxSessions is how many sessions a run opens at once on one host,
// under sshd's default MaxSessions.
const maxSessions = 8

// parseHost splits "user@host:port".
func parseHost(spec, defUser string) (user, host, addr string, err error) {
	user = defUser
	rest := strings.TrimSpace(spec)
	if u, h, ok := strings.Cut(rest, "@"); ok {
		user, rest = u, h
	}
	host, port := rest, "22"
	if h, p, err := net.SplitHostPort(rest); err == nil {
		host, port = h, p
	}
	if host == "" || user == "" {
		return "", "", "", fmt.Errorf("--nodes: %q is not a host (user@host:port, user and port optional)", spec)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", "", "", fmt.Errorf("--nodes: %q: port %q is not a port", spec, port)
	}
	return user, host, net.JoinHostPort(host, port), nil
}

// HostName is the host of a --nodes entry, without user and port ("" for
// an entry ParseHosts refuses).
func HostName(spec string) string {
	_, host, _, err := parseHost(spec, "-")
	if err != nil {
		return ""
	}
	return host
}

// ExpandHosts replaces each "@FILE" of a --nodes list with the hosts the
// file names, one a line ([user@]host[:port]; blank lines and lines that
// begin with # are skipped): many hosts are kept in a file, as Jepsen's
// --nodes-file does.
func ExpandHosts(specs []string) ([]string, error) {
	var out []string
	for _, spec := range specs {
		file, ok := strings.CutPrefix(strings.TrimSpace(spec), "@")
		if !ok {
			out = append(out, spec)
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--nodes @%s: %w: give a file with one host a line", file, err)
		}
		n := len(out)
		for _, line := range strings.Split(string(data), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("--nodes @%s: the file names no host (one [user@]host[:port] a line)", file)
		}
	}
	return out, nil
}

// ParseHosts checks the --nodes list: one clear line for a bad entry.
func ParseHosts(hosts []string) error {
	if len(hosts) == 0 {
		return errors.New("--nodes: no host given")
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		_, _, addr, err := parseHost(h, "user")
		if err != nil {
			return err
		}
		if seen[addr] {
			return fmt.Errorf("--nodes: %s is given twice", h)
		}
		seen[addr] = true
	}
	return nil
}

// authMethod is the key file's signer, or the agent's.
func authMethod(keyFile string) (ssh.AuthMethod, func(), error) {
	if keyFile != "" {
		pem, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--ssh-key: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(pem)
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, nil, fmt.Errorf("--ssh-key %s is protected by a passphrase: load it into your agent (ssh-add) and leave --ssh-key out", keyFile)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--ssh-key %s is not a private key: %w", keyFile, err)
		}
		return ssh.PublicKeys(signer), func() {}, nil
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, nil, errors.New("--nodes: no key to log in with: give --ssh-key FILE, or start an SSH agent (SSH_AUTH_SOCK) holding your key")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, nil, fmt.Errorf("--nodes: the SSH agent at SSH_AUTH_SOCK=%s does not answer: %w", sock, err)
	}
	return ssh.PublicKeysCallback(agent.NewClient(conn).Signers), func() { conn.Close() }, nil
}

// hostKeyCallback checks host keys against the known_hosts file.
func hostKeyCallback(file string) (ssh.HostKeyCallback, string, error) {
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, "", fmt.Errorf("--ssh-known-hosts: no home directory to find ~/.ssh/known_hosts in: %w", err)
		}
		file = filepath.Join(home, ".ssh", "known_hosts")
	}
	cb, err := knownhosts.New(file)
	if err != nil {
		return nil, "", fmt.Errorf("--ssh-known-hosts: %w (host keys are always checked: give a known_hosts file that has your hosts' keys)", err)
	}
	return cb, file, nil
}

// Dial connects to every host, all or none: on an error the connections
// made are closed and the error names the host and what to do.
func Dial(ctx context.Context, opt Options) ([]*Host, error) {
	if err := ParseHosts(opt.Hosts); err != nil {
		return nil, err
	}
	defUser := opt.User
	if defUser == "" {
		defUser = os.Getenv("USER")
	}
	if defUser == "" {
		defUser = "root"
	}
	auth, closeAuth, err := authMethod(opt.KeyFile)
	if err != nil {
		return nil, err
	}
	defer closeAuth()
	check, khFile, err := hostKeyCallback(opt.KnownHosts)
	if err != nil {
		return nil, err
	}
	timeout := opt.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	hosts := make([]*Host, len(opt.Hosts))
	errs := make([]error, len(opt.Hosts))
	var wg sync.WaitGroup
	for i, spec := range opt.Hosts {
		wg.Go(func() {
			hosts[i], errs[i] = dialOne(ctx, spec, defUser, auth, check, khFile, timeout)
		})
	}
	wg.Wait()
	// The first host's error alone, in --nodes order: a key refused
	// everywhere is one line, not one per host.
	if i := slices.IndexFunc(errs, func(err error) bool { return err != nil }); i >= 0 {
		err := errs[i]
		for _, h := range hosts {
			if h != nil {
				h.Close()
			}
		}
		return nil, err
	}
	return hosts, nil
}

func dialOne(ctx context.Context, spec, defUser string, auth ssh.AuthMethod, check ssh.HostKeyCallback, khFile string, timeout time.Duration) (*Host, error) {
	user, name, addr, err := parseHost(spec, defUser)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("host %s: cannot reach its SSH server at %s: %w", name, addr, err)
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{auth}, HostKeyCallback: check, Timeout: timeout}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return nil, explainHandshake(name, addr, user, khFile, err)
	}
	_ = conn.SetDeadline(time.Time{})
	h := &Host{Name: name, Addr: addr, user: user, client: ssh.NewClient(c, chans, reqs), sessions: make(chan struct{}, maxSessions)}
	h.IP = conn.RemoteAddr().(*net.TCPAddr).IP.String()
	h.LocalIP = conn.LocalAddr().(*net.TCPAddr).IP.String()
	return h, nil
}

// explainHandshake turns a failed handshake into one line that says what
// to do: the usual causes are a host key not in known_hosts, a changed
// host key, and a key the host does not accept.
func explainHandshake(name, addr, user, khFile string, err error) error {
	var kerr *knownhosts.KeyError
	if errors.As(err, &kerr) {
		if len(kerr.Want) == 0 {
			return fmt.Errorf("host %s (%s): its host key is not in %s: check it and add it (ssh-keyscan %s >> %s), or give --ssh-known-hosts", name, addr, khFile, name, khFile)
		}
		return fmt.Errorf("host %s (%s): its host key does not match the one %s has for it (line %d): a different machine, or a reinstalled one; refusing to log in",
			name, addr, khFile, kerr.Want[0].Line)
	}
	if strings.Contains(err.Error(), "unable to authenticate") {
		return fmt.Errorf("host %s (%s): user %s is refused with the key given (--ssh-key, the agent): add its public key to that user's authorized_keys there", name, addr, user)
	}
	return fmt.Errorf("host %s (%s): SSH handshake: %w", name, addr, err)
}

// Close closes the host's connection.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil {
		h.client.Close()
		h.client = nil
	}
}

// RemoteError is a command that ran on a host and failed.
type RemoteError struct {
	Host, Cmd string
	Status    int
	Stderr    string
}

func (e *RemoteError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.Status)
	}
	return fmt.Sprintf("on host %s: %s: %s", e.Host, firstLine(e.Cmd), msg)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// Run runs cmd with sh on the host, stdin fed from in (nil: none), and
// returns its standard output. A non-zero exit is a *RemoteError with
// its standard error.
func (h *Host) Run(ctx context.Context, cmd string, in io.Reader) (string, error) {
	h.mu.Lock()
	client := h.client
	h.mu.Unlock()
	if client == nil {
		return "", fmt.Errorf("host %s: connection closed", h.Name)
	}
	select {
	case h.sessions <- struct{}{}:
		defer func() { <-h.sessions }()
	case <-ctx.Done():
		return "", fmt.Errorf("host %s: %s: %w", h.Name, firstLine(cmd), ctx.Err())
	}
	s, err := client.NewSession()
	if err != nil {
		return "", fmt.Errorf("host %s: new session: %w", h.Name, err)
	}
	defer s.Close()
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr, s.Stdin = &out, &errb, in
	done := make(chan error, 1)
	// The login shell may be any; the command is POSIX sh.
	go func() { done <- s.Run("sh -c " + Quote(cmd)) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		s.Close()
		return "", fmt.Errorf("host %s: %s: %w", h.Name, firstLine(cmd), ctx.Err())
	}
	var exit *ssh.ExitError
	if errors.As(err, &exit) {
		return out.String(), &RemoteError{Host: h.Name, Cmd: cmd, Status: exit.ExitStatus(), Stderr: errb.String()}
	}
	if err != nil {
		return out.String(), fmt.Errorf("host %s: %s: %w", h.Name, firstLine(cmd), err)
	}
	return out.String(), nil
}

// Quote quotes s for sh: single quotes, each ' as '\”.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
