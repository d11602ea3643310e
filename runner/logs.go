package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/reports"
)

// workerLogs holds each client's log, capped (cluster.LogLimit) and kept
// open across the restarts of a crashed client, so that the cap and the
// count of what it dropped cover all its processes.
type workerLogs struct {
	mu   sync.Mutex
	logs map[int]*cluster.CappedLog
}

// open returns client i's log in dir, opening it the first time.
func (wl *workerLogs) open(dir string, i int) (*cluster.CappedLog, error) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	if l, ok := wl.logs[i]; ok {
		return l, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create worker logs: %w", err)
	}
	l, err := cluster.OpenCappedLog(filepath.Join(dir, fmt.Sprintf("c%d.log", i)), cluster.LogLimit)
	if err != nil {
		return nil, fmt.Errorf("worker log: %w", err)
	}
	if wl.logs == nil {
		wl.logs = map[int]*cluster.CappedLog{}
	}
	wl.logs[i] = l
	return l, nil
}

// close closes every log, once no worker writes to it any more.
func (wl *workerLogs) close() {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	for _, l := range wl.logs {
		_ = l.Close()
	}
	wl.logs = nil
}

// truncatedLogs returns a note for each worker or server log of the run in
// dir that hit cluster.LogLimit, so that the report says the log is not
// whole.
func truncatedLogs(dir string) []string {
	var logs []string
	for _, pattern := range []string{
		filepath.Join(dir, reports.WorkerLogDir, "*.log"),
		filepath.Join(dir, reports.NodeLogsDir, "*", "*.log"),
	} {
		found, _ := filepath.Glob(pattern)
		logs = append(logs, found...)
	}
	sort.Strings(logs)
	var notes []string
	for _, path := range logs {
		if n, err := cluster.TruncatedBytes(path); err == nil && n > 0 {
			rel, _ := filepath.Rel(dir, path)
			notes = append(notes, fmt.Sprintf("log %s reached its limit of %d MB: %d bytes dropped", rel, cluster.LogLimit>>20, n))
		}
	}
	return notes
}
