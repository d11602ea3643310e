package runner

import (
	"context"

	"github.com/locktest/locktest/reports"
)

// AnalyzeContext is Analyze (Recheck when !write) that gives up when ctx
// ends (Ctrl-C) and returns ErrInterrupted at once: a check may take its whole
// --check-timeout. The abandoned check goes on in the background until
// the process exits, and may leave the report half written; analyze
// rewrites it.
func AnalyzeContext(ctx context.Context, dir string, cfg Resolved, write bool) (reports.Results, error) {
	return analyzeContext(ctx, dir, cfg, write, nil)
}

// analyzeContext is AnalyzeContext, calling writing as the report begins.
func analyzeContext(ctx context.Context, dir string, cfg Resolved, write bool, writing func()) (reports.Results, error) {
	type analysis struct {
		res reports.Results
		err error
	}
	done := make(chan analysis, 1)
	go func() {
		res, err := analyze(dir, cfg, write, writing)
		done <- analysis{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return reports.Results{Dir: dir}, ErrInterrupted
	}
}
