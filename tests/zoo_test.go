package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestZooModesSpeakTheProtocol: every mode of the lock zoo
// (tests/protocol/zoo.py, which scripts/explore-zoo measures the search
// on) starts, answers init, acquire, renew and release over the process
// protocol against a real redis-server, takes the key with a TTL (but
// `open`, whose bug is to take nothing), hands out a token when fenced, and
// announces exactly the checkpoints its flags declare, so that explore can
// strike there. Costs about 3 s: one server, one short conversation per
// mode (more where python3 is a version manager's shim on a busy machine).
func TestZooModesSpeakTheProtocol(t *testing.T) {
	srv := startUsersRedis(t)
	zoo := filepath.Join(protocolDir, "zoo.py")
	out, err := exec.Command("python3", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import zoo; print(*zoo.MODES)",
		protocolDir).Output()
	if err != nil {
		t.Fatalf("listing the zoo's modes: %v", err)
	}
	modes := strings.Fields(string(out))
	if len(modes) < 8 {
		t.Fatalf("the zoo has %d modes, want at least 8: %v", len(modes), modes)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			flags, err := exec.Command("python3", zoo, "--flags", mode).Output()
			if err != nil {
				t.Fatalf("zoo.py --flags %s: %v", mode, err)
			}
			var declared []string
			if f := strings.Fields(string(flags)); len(f) == 2 && f[0] == "--exec-checkpoints" {
				declared = strings.Split(f[1], ",")
			}
			c := startProtocolClient(t, "python3", zoo, mode)
			key := "zoo-" + mode
			c.ask(t, map[string]any{"type": "init", "timeout_ms": 8000, "ttl_ms": 5000, "client": 0,
				"nodes": []string{srv.addr}, "acquire_timeout_ms": 2000, "io_timeout_ms": 500,
				"retry_min_ms": 20, "retry_jitter_ms": 30, "seed": 1}, "ok")
			held := "ok"
			if mode == "open" {
				held = "fail" // nothing was taken: nothing to renew or release
			}
			g := c.ask(t, map[string]any{"type": "acquire", "key": key, "timeout_ms": 2000, "ttl_ms": 5000}, "ok")
			ctx := context.Background()
			if v, _ := srv.rdb.Get(ctx, key).Result(); (v == g.Owner) != (mode != "open") {
				t.Errorf("after the acquire the key holds %q, the grant's owner is %q", v, g.Owner)
			}
			if ttl := srv.rdb.PTTL(ctx, key).Val(); mode != "open" && ttl <= 0 {
				t.Errorf("the key has no lease after the acquire: PTTL %v", ttl)
			}
			if fenced := mode == "fenced" || mode == "token-after"; fenced != (g.Token > 0) {
				t.Errorf("token %d from a lock fenced=%v", g.Token, fenced)
			}
			renew := map[string]any{"type": "renew", "key": key, "timeout_ms": 500, "ttl_ms": 5000, "owner": g.Owner, "token": g.Token}
			c.ask(t, renew, held)
			c.ask(t, map[string]any{"type": "release", "key": key, "timeout_ms": 500, "owner": g.Owner, "token": g.Token}, held)
			if n := srv.rdb.Exists(ctx, key).Val(); n != 0 {
				t.Errorf("the key is still there after the release")
			}
			slices.Sort(c.points)
			if !slices.Equal(c.points, declared) {
				t.Errorf("announced checkpoints %v, its flags declare %v", c.points, declared)
			}
		})
	}
}

// protocolClient is a lock program driven over the process protocol by the
// test itself (docs/protocol.md), the way a worker drives it.
type protocolClient struct {
	in     *json.Encoder
	out    *bufio.Scanner
	id     int
	points []string // checkpoints announced, each once
}

type protocolReply struct {
	InReplyTo *int   `json:"in_reply_to"`
	Type      string `json:"type"`
	Point     string `json:"point"`
	Owner     string `json:"owner"`
	Token     int64  `json:"token"`
	Error     string `json:"error"`
}

func startProtocolClient(t *testing.T, name string, args ...string) *protocolClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cmd := exec.CommandContext(ctx, name, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s did not exit cleanly when its stdin closed: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		cancel()
	})
	return &protocolClient{in: json.NewEncoder(stdin), out: bufio.NewScanner(stdout)}
}

// ask sends req, answers each checkpoint on the way with continue, and
// fails the test unless the reply is of type want.
func (c *protocolClient) ask(t *testing.T, req map[string]any, want string) protocolReply {
	t.Helper()
	req["id"] = c.id
	c.id++
	if err := c.in.Encode(req); err != nil {
		t.Fatalf("writing %v: %v", req, err)
	}
	for {
		if !c.out.Scan() {
			t.Fatalf("no reply to %v: %v", req, c.out.Err())
		}
		var r protocolReply
		if err := json.Unmarshal(c.out.Bytes(), &r); err != nil || r.InReplyTo == nil || *r.InReplyTo != req["id"] {
			t.Fatalf("reply to %v: %s", req, c.out.Bytes())
		}
		if r.Type != "checkpoint" {
			if r.Type != want {
				t.Fatalf("%s: %s (%s), want %s", req["type"], r.Type, r.Error, want)
			}
			return r
		}
		if !slices.Contains(c.points, r.Point) {
			c.points = append(c.points, r.Point)
		}
		if err := c.in.Encode(map[string]any{"type": "continue", "in_reply_to": req["id"]}); err != nil {
			t.Fatalf("continuing %s: %v", r.Point, err)
		}
	}
}
