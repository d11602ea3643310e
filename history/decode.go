package history

import (
	"encoding/json"
)

// decoder parses history lines. The lines the Writer produces are flat
// objects of known keys with integer, null and plain string values; those
// it parses itself, several times faster than encoding/json and sharing
// the strings that repeat (types, op names, keys, errors). Anything else
// (escapes, other keys or number forms, bad JSON) goes to encoding/json,
// which has the last word on what a line means.
type decoder struct {
	strs   map[string]string
	values []int64 // Record.Value points into these, allocated in blocks
}

// maxShared bounds how many distinct strings the decoder keeps to share.
const maxShared = 4096

func (d *decoder) decode(line []byte, r *Record) error {
	if d.fast(line, r) {
		return nil
	}
	*r = Record{}
	return json.Unmarshal(line, r)
}

func (d *decoder) str(b []byte) string {
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.strs == nil {
		d.strs = map[string]string{}
	}
	if len(d.strs) < maxShared {
		d.strs[s] = s
	}
	return s
}

func (d *decoder) value(v int64) *int64 {
	if len(d.values) == cap(d.values) {
		d.values = make([]int64, 0, 1024)
	}
	d.values = append(d.values, v)
	return &d.values[len(d.values)-1]
}

// fast parses line into r, or reports false and leaves r to be reset.
func (d *decoder) fast(b []byte, r *Record) bool {
	end, ok := d.object(b, skipSpace(b, 0), r)
	return ok && skipSpace(b, end) == len(b)
}

// Decoder parses records as Read does, for a reader with its own framing:
// the coordinator, whose workers send each record inside a message.
type Decoder struct{ d decoder }

// Prefix parses the record object at the start of b and returns the bytes
// after it, or reports false when the fast path does not take b (see
// decoder): the caller then decodes the whole of its line with
// encoding/json, and resets r, which may be partly set.
func (d *Decoder) Prefix(b []byte, r *Record) ([]byte, bool) {
	end, ok := d.d.object(b, 0, r)
	if !ok {
		return nil, false
	}
	return b[end:], true
}

// object parses the object at b[i] into r and returns the index after it.
func (d *decoder) object(b []byte, i int, r *Record) (int, bool) {
	if i == len(b) || b[i] != '{' {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return i, false
		}
		i = skipSpace(b, j)
		if i == len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		switch string(key) {
		case "index", "process", "seq", "time", "token", "validity", "cmds":
			n, j, ok := integer(b, i)
			if !ok {
				return i, false
			}
			switch string(key) {
			case "index":
				r.Index = int(n)
			case "process":
				r.Process = int(n)
			case "seq":
				r.Seq = int(n)
			case "time":
				r.Time = n
			case "token":
				r.Token = n
			case "validity":
				r.Validity = n
			case "cmds":
				r.Cmds = int(n)
			}
			i = j
		case "value":
			if len(b)-i >= 4 && string(b[i:i+4]) == "null" {
				r.Value, i = nil, i+4
				break
			}
			n, j, ok := integer(b, i)
			if !ok {
				return i, false
			}
			r.Value, i = d.value(n), j
		case "type", "f", "key", "error", "fault", "target", "moment", "point":
			v, j, ok := plainString(b, i)
			if !ok {
				return i, false
			}
			s := d.str(v)
			switch string(key) {
			case "type":
				r.Type = Type(s)
			case "f":
				r.F = s
			case "key":
				r.Key = s
			case "error":
				r.Error = s
			case "fault":
				r.Fault = s
			case "target":
				r.Target = s
			case "moment":
				r.Moment = s
			case "point":
				r.Point = s
			case "aim":
				r.Aim = Aim(s)
			}
			i = j
		default:
			return i, false
		}
		i = skipSpace(b, i)
		if i == len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] with no escapes, control
// characters or non-ASCII bytes, and returns its content and the index
// after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i == len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, i, false
		}
	}
	return nil, i, false
}

// integer reads a JSON integer of at most 18 digits (no fraction, exponent
// or leading zero) at b[i].
func integer(b []byte, i int) (int64, int, bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && b[start] == '0') {
		return 0, i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, i, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}
