package cluster

import (
	"os/exec"
	"testing"
	"time"
)

// TestSignalsToAnExitedProcess: pausing, resuming or killing a process that
// has exited does nothing and returns at once (its pid may be reused).
func TestSignalsToAnExitedProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process; run without -short")
	}
	path, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Spec{Name: "true", Path: path, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	done := make(chan error, 1)
	go func() {
		var err error
		for _, f := range []func() error{p.Pause, p.Resume, p.Kill} {
			if e := f(); e != nil && err == nil {
				err = e
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("signalling an exited process hangs")
	}
	if p.Stopped() {
		t.Fatal("an exited process reads as stopped")
	}
}
