package workloads

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/lock"
)

// startResource starts a real redis-server as the resource node; the
// cluster stops it when the test ends.
func startResource(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real redis-server; run without -short")
	}
	c := cluster.New(t.TempDir())
	t.Cleanup(func() { _ = c.Stop() })
	node, err := c.StartRedis(context.Background(), cluster.RoleResource, cluster.RedisOptions{Role: cluster.RoleResource})
	if err != nil {
		t.Fatal(err)
	}
	return node.Addr()
}

// step is one operation on the resource: a read (write < 0) or a write of
// write, with a token.
type step struct {
	token, write int64
	refused      bool  // want ErrStale
	value        int64 // a read's value, when accepted
}

func read(token int64, value int64) step { return step{token: token, write: -1, value: value} }
func write(token, v int64) step          { return step{token: token, write: v} }
func refused(s step) step                { s.refused = true; return s }

// TestResourceFencing runs the resource's semantics on a real Redis, in
// both fencing modes: a write older than the newest token is refused in
// both; a read is checked, and counts as the newest token, only when
// reads are fenced.
func TestResourceFencing(t *testing.T) {
	addr := startResource(t)
	cases := []struct {
		name    string
		fencing string
		steps   []step
	}{
		{"stale write refused", FenceWrites, []step{write(2, 1), refused(write(1, 5)), read(0, 1)}},
		{"stale write refused", FenceReadsWrites, []step{write(2, 1), refused(write(1, 5)), read(0, 1)}},
		{"equal token accepted", FenceWrites, []step{write(2, 1), write(2, 2), read(0, 2)}},
		{"equal token accepted", FenceReadsWrites, []step{write(2, 1), write(2, 2), read(0, 2)}},
		{"stale read allowed", FenceWrites, []step{write(2, 1), read(1, 1)}},
		{"stale read refused", FenceReadsWrites, []step{write(2, 1), refused(read(1, 0))}},
		// Kleppmann's storage never hears of a read: the stale holder's
		// write after a newer holder's read lands.
		{"read leaves no mark", FenceWrites, []step{write(1, 1), read(2, 1), write(1, 7), read(0, 7)}},
		{"read raises the token", FenceReadsWrites, []step{write(1, 1), read(2, 1), refused(write(1, 7)), read(0, 1)}},
		{"unfenced ops pass", FenceReadsWrites, []step{write(5, 1), read(0, 1), write(0, 3), read(0, 3)}},
	}
	for i, tc := range cases {
		t.Run(tc.fencing+"/"+tc.name, func(t *testing.T) {
			res := NewResource(addr, 2*time.Second, tc.fencing)
			defer res.Close()
			key := fmt.Sprintf("case-%d", i)
			for j, s := range tc.steps {
				var v int64
				var err error
				what := fmt.Sprintf("step %d: read with token %d", j, s.token)
				if s.write >= 0 {
					what = fmt.Sprintf("step %d: write %d with token %d", j, s.write, s.token)
					err = res.Write(context.Background(), key, s.write, s.token)
				} else {
					v, err = res.Read(context.Background(), key, s.token)
				}
				switch {
				case s.refused && !errors.Is(err, lock.ErrStale):
					t.Fatalf("%s: got %v, want refused (stale)", what, err)
				case !s.refused && err != nil:
					t.Fatalf("%s: %v", what, err)
				case !s.refused && s.write < 0 && v != s.value:
					t.Fatalf("%s: read %d, want %d", what, v, s.value)
				}
			}
		})
	}
}

// sink collects the records of every client in one history.
type sink struct{ recs []history.Record }

func (s *sink) Record(r history.Record) { r.Index = len(s.recs); s.recs = append(s.recs, r) }
func (s *sink) InCriticalSection()      {}

// TestCounterFencingChecked interleaves two counter critical sections
// (read v, write v+1, recorded as the counter workload records them) on a
// real resource, and has the checker judge the history: with writes
// fenced only, a stale holder's write between a newer holder's read and
// its write lands and an update is lost, whether the tokens came in order
// or not; with reads fenced too, the late operation is refused (a
// definite failure with no effect) and nothing is lost.
func TestCounterFencingChecked(t *testing.T) {
	addr := startResource(t)
	// Each move is a client's read ('r') or write ('w'); clients 0 and 1
	// hold tokens[0] and tokens[1].
	type move struct {
		client int
		op     byte
	}
	interleavings := []struct {
		name   string
		tokens [2]int64
		moves  []move
	}{
		// c0's lease ran out while paused after its read; c1 took over
		// with a newer token and read before c0's late write.
		{"stale holder writes inside the next hold", [2]int64{1, 2}, []move{{0, 'r'}, {1, 'r'}, {0, 'w'}, {1, 'w'}}},
		// zoo.py token-after: c1 is the rightful holder, c0 the stale one
		// that fetched its token after the pause, so it has the newer.
		{"tokens out of order", [2]int64{2, 1}, []move{{0, 'r'}, {1, 'r'}, {1, 'w'}, {0, 'w'}}},
	}
	want := map[string]struct {
		verdict  checker.Verdict
		lost     int
		rejected int
	}{
		FenceWrites:      {checker.Invalid, 1, 0},
		FenceReadsWrites: {checker.Valid, 0, 1},
	}
	for i, il := range interleavings {
		for _, fencing := range FencingModes {
			t.Run(fencing+"/"+il.name, func(t *testing.T) {
				res := NewResource(addr, 2*time.Second, fencing)
				defer res.Close()
				key := fmt.Sprintf("interleaving-%d-%s", i, fencing)
				s := &sink{}
				var envs [2]*Env
				var ops [2]*op
				var read [2]int64
				var readErr [2]error
				for c := range envs {
					envs[c] = &Env{Client: c, Resource: res, Sink: s}
				}
				for _, m := range il.moves {
					e, tok := envs[m.client], il.tokens[m.client]
					switch {
					case m.op == 'r':
						ops[m.client] = e.invoke(history.FIncr, key)
						read[m.client], readErr[m.client] = res.Read(context.Background(), key, tok)
						if readErr[m.client] != nil {
							ops[m.client].done(definiteRead(readErr[m.client]), func(r *history.Record) { r.Token = tok })
						}
					case readErr[m.client] == nil:
						err := res.Write(context.Background(), key, read[m.client]+1, tok)
						v := read[m.client]
						ops[m.client].done(err, func(r *history.Record) { r.Value, r.Token = history.Int64(v), tok })
					}
				}
				final := &Env{Client: history.NemesisProcess, Sink: s}
				o := final.invoke(history.FRead, key)
				v, err := res.Read(context.Background(), key, 0)
				o.done(err, func(r *history.Record) { r.Value = history.Int64(v) })

				rep := checker.Check(s.recs, checker.Options{Timeout: 10 * time.Second})
				w := want[fencing]
				if rep.Resource.Verdict != w.verdict || rep.Stats.Lost != w.lost || rep.Stats.Rejected != w.rejected {
					t.Fatalf("resource check %s, %d lost, %d rejected (final %d); want %s, %d lost, %d rejected",
						rep.Resource.Verdict, rep.Stats.Lost, rep.Stats.Rejected, v, w.verdict, w.lost, w.rejected)
				}
			})
		}
	}
}
