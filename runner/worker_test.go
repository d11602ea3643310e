package runner

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
)

// A worker's lines are what encoding/json writes and reads, whichever way
// they are written and read.
func TestMessagesMatchJSON(t *testing.T) {
	rec := history.Record{Seq: 4, Type: history.OK, F: history.FAcquire, Key: "lock-3", Token: 9, Time: 12345, Cmds: 2}
	odd := history.Record{Seq: 5, Type: history.Info, F: history.FRelease, Key: "lock-3", Time: 1, Error: `i/o timeout <"x">`, Value: history.Int64(-2)}
	for _, m := range []message{
		{Record: &rec},
		{Record: &rec, InCS: true},
		{Record: &odd},
		{Record: &history.Record{}},
		{InCS: true},
		{Paused: "acquire-granted"},
		{Clock: &clockAck{Offset: time.Second, Rate: 1.5, Skew: -3}},
		{Record: &rec, Paused: "x"},
	} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got := appendMessage(nil, &m)
		if string(got) != string(want) {
			t.Errorf("appendMessage wrote %s, encoding/json %s", got, want)
		}
		var dec messageDecoder
		var gm, wm message
		if err := dec.decode(got, &gm); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if err := json.Unmarshal(got, &wm); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gm, wm) {
			t.Errorf("%s: decoded %+v, encoding/json %+v", got, gm, wm)
		}
	}
	var dec messageDecoder
	var m message
	for _, bad := range []string{`{"r":{"time":1}`, `{"r":{"time":1},"cs":tru}`, `not json`, `{"r":{"time":1}}}`} {
		if err := dec.decode([]byte(bad), &m); err == nil {
			t.Errorf("%s: decoded %+v, want an error", bad, m)
		}
	}
}
