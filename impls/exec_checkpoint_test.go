package impls

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/lock"
)

// checkpointProgram announces after-set inside acquire and before-del inside
// release, or the point its argument names inside renew, and measures how
// long it waited for each continue line: that is the acquire's token.
const checkpointProgram = `
import json, sys, time
renew_point = sys.argv[1]
def say(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def checkpoint(req, point):
    say({"type": "checkpoint", "point": point, "in_reply_to": req["id"]})
    t = time.monotonic()
    ack = json.loads(sys.stdin.readline())
    assert ack == {"type": "continue", "in_reply_to": req["id"]}, ack
    return int((time.monotonic() - t) * 1000)
for line in sys.stdin:
    req = json.loads(line)
    rep = {"type": "ok", "in_reply_to": req["id"]}
    if req["type"] == "acquire":
        rep["token"] = 1 + checkpoint(req, "after-set")
    elif req["type"] == "release":
        checkpoint(req, "before-del")
    elif req["type"] == "renew":
        checkpoint(req, renew_point)
    say(rep)
`

// TestExecCheckpoints: a checkpoint line reaches cfg.Checkpoint, which may
// hold the client, and the program goes on only with the continue line sent
// once it returns; a point not listed, or announced in a renew, breaks the
// program with a line saying what to fix.
func TestExecCheckpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a python3 program")
	}
	cases := []struct {
		name, renewPoint string
		listed           []string
		wantErr          string // from the renew
	}{
		{"in renew", "after-set", []string{"after-set", "before-del"}, "checkpoints go inside acquire and release only"},
		{"release's not listed", "after-set", []string{"after-set"}, `announced checkpoint "before-del", which --exec-checkpoints does not list (it lists after-set): add it`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const hold = 300 * time.Millisecond
			var mu sync.Mutex
			var reached []string
			cfg := lock.Config{Client: 0, TTL: time.Second, AcquireTimeout: time.Second, IOTimeout: time.Second,
				Clock: clock.System{}, ExecCmd: "python3 -c '" + checkpointProgram + "' " + tc.renewPoint, ExecCheckpoints: tc.listed,
				Checkpoint: func(p string) {
					mu.Lock()
					reached = append(reached, p)
					mu.Unlock()
					time.Sleep(hold) // a fault holding the client
				}}
			l, err := newExec(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			g, err := l.Acquire(ctx, "lock-0")
			if err != nil {
				t.Fatal(err)
			}
			if waited := time.Duration(g.Token-1) * time.Millisecond; waited < hold {
				t.Fatalf("the program went on %v after its checkpoint, before the client was let go (%v)", waited, hold)
			}
			err = l.Release(ctx, "lock-0", g)
			if len(tc.listed) == 1 {
				if err == nil || !lock.IsBroken(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("release: %v, want broken saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.(lock.Renewer).Renew(ctx, "lock-0", g)
			if err == nil || !lock.IsBroken(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("renew: %v, want broken saying %q", err, tc.wantErr)
			}
			if want := "after-set,before-del"; strings.Join(reached, ",") != want {
				t.Fatalf("reached %v, want %s", reached, want)
			}
		})
	}
}
