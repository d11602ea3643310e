package impls

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/locktest/locktest/lock"
)

// TestZooKeeperErrors: what the ensemble answered, or never received, is a
// definite failure; a request lost with its connection, or timed out while
// queued, may still take effect.
func TestZooKeeperErrors(t *testing.T) {
	for _, tc := range []struct {
		err      error
		definite bool
	}{
		{zk.ErrNoNode, true},
		{zk.ErrNodeExists, true},
		{zk.ErrSessionExpired, true},
		{zk.ErrNoServer, true},
		{fmt.Errorf("wrapped: %w", zk.ErrNoNode), true},
		{zk.ErrConnectionClosed, false},
		{zk.ErrClosing, false},
		{context.DeadlineExceeded, false},
		{errors.New("something else"), false},
	} {
		if got := lock.IsDefinite(zkErr(tc.err)); got != tc.definite {
			t.Errorf("zkErr(%v) definite = %v, want %v", tc.err, got, tc.definite)
		}
	}
	if zkErr(nil) != nil {
		t.Error("zkErr(nil) is not nil")
	}
}

// TestZooKeeperSequence: tokens follow the znodes' sequence numbers and
// are never 0, which means "not fenced".
func TestZooKeeperSequence(t *testing.T) {
	for _, tc := range []struct {
		path string
		want int64
	}{
		{"/locktest/lock-0/lock-0000000000", 1},
		{"/locktest/lock-0/lock-0000000041", 42},
	} {
		got, err := zkSequence(tc.path)
		if err != nil || got != tc.want {
			t.Errorf("zkSequence(%q) = %d, %v; want %d", tc.path, got, err, tc.want)
		}
	}
	if _, err := zkSequence("/locktest/lock-0/x"); err == nil {
		t.Error("a znode without a sequence number parsed")
	}
}
