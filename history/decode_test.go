package history

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// sameAsJSON fails unless the decoder reads line as encoding/json does.
func sameAsJSON(t *testing.T, line []byte) {
	t.Helper()
	var want Record
	werr := json.Unmarshal(line, &want)
	var d decoder
	var got Record
	gerr := d.decode(line, &got)
	if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: decoded %+v (%v), encoding/json %+v (%v)", line, got, gerr, want, werr)
	}
}

func TestDecodeMatchesJSON(t *testing.T) {
	for _, line := range []string{
		`{"index":0,"process":2,"seq":1,"type":"invoke","f":"acquire","key":"lock-0","time":2576714167207}`,
		`{"index":7,"process":-1,"seq":1,"type":"ok","f":"read","key":"lock-0","value":1148,"time":2636764962920}`,
		`{"index":9,"process":3,"seq":2,"type":"fail","f":"incr","key":"k","value":-3,"token":7,"time":1,"cmds":4,"error":"stale token rejected"}`,
		`{"index":1,"type":"fault-start","f":"fault","fault":"pause-holder","target":"c3","moment":"grant","time":5}`,
		` { "index" : 1 , "value" : null , "time" : 2 } `,
		`{}`,
		`{"error":"a \"quoted\" word","time":1}`,
		`{"error":"caf\u00e9 \t","time":1}`,
		`{"error":"café","time":1}`,
		`{"Index":3,"TIME":4}`,
		`{"index":1.0}`,
		`{"index":1e3}`,
		`{"index":01}`,
		`{"time":123456789012345678901}`,
		`{"time":-0}`,
		`{"type":null,"f":"x"}`,
		`{"index":1,"extra":{"a":[1,2]}}`,
		`{"index":1,}`,
		`{"index":1}x`,
		`{"index":1`,
		`{"index":1,"index":2}`,
		`[1,2]`,
		`{"index":`,
	} {
		sameAsJSON(t, []byte(line))
	}
}

func TestDecodeMatchesJSONOnStoredRun(t *testing.T) {
	for _, line := range storedRunLines(t) {
		sameAsJSON(t, line)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"index":9,"process":3,"seq":2,"type":"fail","f":"incr","key":"k","value":-3,"token":7,"time":1,"cmds":4,"error":"x"}`))
	f.Add([]byte(`{"index":1,"value":null}`))
	f.Fuzz(func(t *testing.T, line []byte) { sameAsJSON(t, line) })
}

// TestReadLongLine reads a line longer than the read buffer.
func TestReadLongLine(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	text := `{"index":0,"time":1,"error":"` + long + `"}` + "\n" + `{"index":1,"time":2}` + "\n"
	recs, err := Read(strings.NewReader(text))
	if err != nil || len(recs) != 2 || recs[0].Error != long || recs[1].Index != 1 {
		t.Fatalf("read %d records (%v)", len(recs), err)
	}
}
