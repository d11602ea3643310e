package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WaitAllStopped waits until every thread of the process is stopped (state
// T), up to timeout. SIGSTOP stops a multi-threaded process thread by
// thread: kill returns before the last one has stopped, and a thread that
// is told to go on in that gap does.
func (p *Process) WaitAllStopped(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		running, err := p.runningThreads()
		if err != nil || running == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d thread(s) still running %s after SIGSTOP", p.Name, running, timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// runningThreads counts the process's threads that are not stopped.
func (p *Process) runningThreads() (int, error) {
	dir := fmt.Sprintf("/proc/%d/task", p.Pid())
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("threads of %s: %w", p.Name, err)
	}
	n := 0
	for _, t := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) || (s[i+2] != 'T' && s[i+2] != 't') {
			n++
		}
	}
	return n, nil
}
