package faults

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestOnAll: a strike acts on every item at once (each waits here until
// all have begun, which a one-by-one loop never reaches), a failure
// undoes exactly the ones done, and the heal undoes all.
func TestOnAll(t *testing.T) {
	for _, failAt := range []int{-1, 2} {
		var mu sync.Mutex
		var undone []int
		begun := make(chan struct{})
		var once sync.Once
		var n sync.WaitGroup
		n.Add(5)
		go func() { n.Wait(); once.Do(func() { close(begun) }) }()
		do := func(i int) error {
			n.Done()
			select {
			case <-begun:
			case <-time.After(10 * time.Second):
				return errors.New("the others never began: one at a time")
			}
			if i == failAt {
				return errors.New("refused")
			}
			return nil
		}
		undo := func(i int) error {
			mu.Lock()
			defer mu.Unlock()
			undone = append(undone, i)
			return nil
		}
		heal, err := onAll([]int{0, 1, 2, 3, 4}, do, undo)
		slices.Sort(undone)
		switch {
		case failAt >= 0 && (err == nil || heal != nil || !slices.Equal(undone, []int{0, 1, 3, 4})):
			t.Errorf("item %d refused: err %v, undone %v; want an error and the other four undone", failAt, err, undone)
		case failAt < 0 && (err != nil || len(undone) != 0):
			t.Errorf("all done: err %v, undone %v; want none yet", err, undone)
		case failAt < 0:
			if err := heal(); err != nil || len(undone) != 5 {
				t.Errorf("heal: %v, undone %v; want all five", err, undone)
			}
		}
	}
}
