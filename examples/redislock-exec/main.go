// Command redislock-exec is the Go reference client of locktest's process
// protocol (docs/protocol.md): it serves the single-Redis lock, the same
// code as the built-in redis-single and redis-single-fenced designs, over
// JSON lines on stdin/stdout. Run under locktest, it must give the same
// verdicts as those designs, which is how the tests check the protocol:
//
//	go build -o /tmp/redislock-exec ./examples/redislock-exec
//	locktest run --impl exec --exec-servers redis-single \
//	    --exec-cmd '/tmp/redislock-exec -fenced' --fault pause-holder
//
// It reads one request per line, answers each in order, logs to stderr and
// exits when stdin closes.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/protocol"
)

func main() {
	fenced := flag.Bool("fenced", false, "hand out fencing tokens (redis-single-fenced)")
	flag.Parse()
	design := "redis-single"
	if *fenced {
		design = "redis-single-fenced"
	}
	if err := serve(design); err != nil {
		slog.Error("redislock-exec", "err", err)
		os.Exit(1)
	}
}

// server holds the lock client once init has built it.
type server struct {
	design impls.Design
	lock   lock.Lock
}

func serve(name string) error {
	d, err := impls.Lookup(name)
	if err != nil {
		return err
	}
	s := &server{design: d}
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout) // one line per reply; os.Stdout is unbuffered
	for in.Scan() {
		var req protocol.Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return fmt.Errorf("bad request %q: %w", in.Text(), err)
		}
		rep := s.handle(req)
		rep.InReplyTo = req.ID
		if err := out.Encode(rep); err != nil {
			return fmt.Errorf("write reply: %w", err)
		}
	}
	if s.lock != nil {
		s.lock.Close()
	}
	return in.Err()
}

func (s *server) handle(req protocol.Request) protocol.Reply {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	if req.Type == protocol.Init {
		if req.Setup == nil || len(req.Nodes) == 0 {
			return protocol.Reply{Type: protocol.Fail, Error: "init without nodes"}
		}
		client, err := s.design.New(lock.Config{Client: req.Client, Nodes: req.Nodes, TTL: ms(req.TTLMs),
			AcquireTimeout: ms(req.AcquireTimeoutMs), IOTimeout: ms(req.IOTimeoutMs), RetryMin: ms(req.RetryMinMs),
			RetryJitter: ms(req.RetryJitterMs), Seed: req.Seed, Clock: clock.System{}})
		if err != nil {
			return protocol.Reply{Type: protocol.Fail, Error: err.Error()}
		}
		s.lock = client
		slog.Info("redislock-exec ready", "client", req.Client, "design", s.design.Name, "nodes", req.Nodes)
		return protocol.Reply{Type: protocol.OK}
	}
	if s.lock == nil {
		return protocol.Reply{Type: protocol.Fail, Error: req.Type + " before init"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ms(req.TimeoutMs))
	defer cancel()
	before := s.commands()
	g := lock.Grant{Owner: req.Owner, Token: req.Token}
	var err error
	switch req.Type {
	case protocol.Acquire:
		g, err = s.lock.Acquire(ctx, req.Key)
	case protocol.Release:
		err = s.lock.Release(ctx, req.Key, g)
	case protocol.Renew:
		r, ok := s.lock.(lock.Renewer)
		if !ok {
			return protocol.Reply{Type: protocol.Fail, Error: s.design.Name + " cannot renew"}
		}
		g, err = r.Renew(ctx, req.Key, g)
	default:
		return protocol.Reply{Type: protocol.Fail, Error: "unknown request type " + req.Type}
	}
	rep := protocol.Reply{Cmds: s.commands() - before}
	switch {
	case err == nil:
		rep.Type, rep.Owner, rep.Token, rep.ValidityMs = protocol.OK, g.Owner, g.Token, max(g.Validity.Milliseconds(), 0)
	case lock.IsDefinite(err):
		rep.Type, rep.Error = protocol.Fail, err.Error()
	default:
		rep.Type, rep.Error = protocol.Error, err.Error()
	}
	return rep
}

func (s *server) commands() int64 {
	if c, ok := s.lock.(lock.CommandCounter); ok {
		return c.Commands()
	}
	return 0
}
