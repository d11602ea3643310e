package history

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// AppendJSON appends r as encoding/json writes it (json.Marshal: no
// newline) to dst and returns the extended slice. Every record of a lock
// cycle is encoded twice, by its worker and into the history, and
// encoding/json's reflection was the largest share of both after the
// system calls; this writes the fields directly, in the struct's order and
// with its omitempty rules. Strings of printable ASCII that JSON and
// encoding/json's HTML escaping leave alone (every op name, key, type and
// almost every error) are copied as they are; any other string, and the
// coordinator's records with a Lag or Stopped, go through encoding/json,
// so the bytes are always the ones it would write (TestAppendJSONMatches).
func AppendJSON(dst []byte, r *Record) []byte {
	if r.Lag != nil || r.Stopped != nil {
		b, err := json.Marshal(r)
		if err != nil { // a Record always encodes; this is a bug
			panic(fmt.Errorf("encode record: %w", err))
		}
		return append(dst, b...)
	}
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, int64(r.Index), 10)
	dst = append(dst, `,"process":`...)
	dst = strconv.AppendInt(dst, int64(r.Process), 10)
	if r.Seq != 0 {
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendInt(dst, int64(r.Seq), 10)
	}
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, string(r.Type))
	dst = append(dst, `,"f":`...)
	dst = appendString(dst, r.F)
	if r.Key != "" {
		dst = append(dst, `,"key":`...)
		dst = appendString(dst, r.Key)
	}
	if r.Value != nil {
		dst = append(dst, `,"value":`...)
		dst = strconv.AppendInt(dst, *r.Value, 10)
	}
	if r.Token != 0 {
		dst = append(dst, `,"token":`...)
		dst = strconv.AppendInt(dst, r.Token, 10)
	}
	if r.Validity != 0 {
		dst = append(dst, `,"validity":`...)
		dst = strconv.AppendInt(dst, r.Validity, 10)
	}
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, r.Time, 10)
	if r.Cmds != 0 {
		dst = append(dst, `,"cmds":`...)
		dst = strconv.AppendInt(dst, int64(r.Cmds), 10)
	}
	if r.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, r.Error)
	}
	if r.Fault != "" {
		dst = append(dst, `,"fault":`...)
		dst = appendString(dst, r.Fault)
	}
	if r.Target != "" {
		dst = append(dst, `,"target":`...)
		dst = appendString(dst, r.Target)
	}
	if r.Moment != "" {
		dst = append(dst, `,"moment":`...)
		dst = appendString(dst, r.Moment)
	}
	if r.Point != "" {
		dst = append(dst, `,"point":`...)
		dst = appendString(dst, r.Point)
	}
	if r.Aim != "" {
		dst = append(dst, `,"aim":`...)
		dst = appendString(dst, string(r.Aim))
	}
	if r.Asked != 0 {
		dst = append(dst, `,"asked":`...)
		dst = strconv.AppendInt(dst, r.Asked, 10)
	}
	if r.HealStart != 0 {
		dst = append(dst, `,"heal_start":`...)
		dst = strconv.AppendInt(dst, r.HealStart, 10)
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
