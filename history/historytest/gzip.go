package historytest

import (
	"compress/gzip"
	"os"
	"testing"

	"github.com/locktest/locktest/history"
)

// ReadGz reads a gzipped history kept as test data, failing t on any
// error: the stored runs several packages test against are kept this way.
func ReadGz(t testing.TB, path string) []history.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := history.Read(zr)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
