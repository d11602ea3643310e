package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Request types, sent by locktest.
const (
	// Init is the first request: who the program is and where the lock
	// servers are.
	Init = "init"
	// Acquire asks for the lock on Key, giving up by TimeoutMs.
	Acquire = "acquire"
	// Release gives back the lock described by Owner and Token.
	Release = "release"
	// Renew extends the lease of a held lock by TTLMs.
	Renew = "renew"
	// Continue answers a Checkpoint line: the program may go on with the
	// request it names. Until it comes, the program waits, so that a fault
	// holding the client at the checkpoint holds the program between the
	// two round trips it was announced between.
	Continue = "continue"
)

// Reply types, sent by the program. What each means for the checker is the
// contract: get it wrong and the verdict is wrong.
const (
	// OK: the request took effect (acquired, released, renewed).
	OK = "ok"
	// Fail: the request definitely did not take effect (not acquired by
	// the deadline; not held any more; not renewed).
	Fail = "fail"
	// Error: the outcome is unknown (a timeout, a lost connection): the
	// request may have taken effect. Recorded as info, never as fail.
	Error = "error"
	// Checkpoint is no reply: the program says it has reached Point while
	// handling the request named by InReplyTo (an acquire or a release),
	// and waits for a Continue line before it goes on. The Go API's
	// lock.Config.Reach, for a program.
	Checkpoint = "checkpoint"
)

// MaxPoint is the longest checkpoint name, in bytes.
const MaxPoint = 64

// CheckPoint says what is wrong with a checkpoint name, or nil. Names are
// the program's free text, shown in commands, logs and reports: short,
// printable, and without the comma that separates them in a list.
func CheckPoint(name string) error {
	switch {
	case name == "":
		return errors.New("a checkpoint name is empty")
	case len(name) > MaxPoint:
		return fmt.Errorf("checkpoint name %.20q… is longer than %d bytes", name, MaxPoint)
	case !utf8.ValidString(name):
		return fmt.Errorf("checkpoint name %q is not valid UTF-8", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("checkpoint name %q begins or ends with a blank", name)
	case strings.ContainsRune(name, ','):
		return fmt.Errorf("checkpoint name %q holds a comma, which separates names in a list", name)
	case strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsGraphic(r) }):
		return fmt.Errorf("checkpoint name %q holds a character that is not printable", name)
	}
	return nil
}

// Request is one line locktest writes to the program's stdin. Fields a
// request type does not use are left out.
type Request struct {
	// ID is unique per program and increasing; the reply names it.
	ID   int64  `json:"id"`
	Type string `json:"type"`
	Key  string `json:"key,omitempty"`
	// TimeoutMs is the request's deadline, in milliseconds after the
	// program read it: reply by then, fail or error if need be.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
	// TTLMs is the lease to ask for (acquire) or extend by (renew).
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// Owner and Token are the ones the acquire's reply gave, sent back
	// with release and renew.
	Owner string `json:"owner,omitempty"`
	Token int64  `json:"token,omitempty"`
	// Setup is set in the init request only.
	*Setup
}

// Setup is what init tells the program about the run.
type Setup struct {
	// Client is this worker's number (c0, c1, …), unique in the run.
	Client int `json:"client"`
	// Nodes are the lock servers' addresses, host:port.
	Nodes            []string `json:"nodes"`
	AcquireTimeoutMs int64    `json:"acquire_timeout_ms"`
	IOTimeoutMs      int64    `json:"io_timeout_ms"`
	RetryMinMs       int64    `json:"retry_min_ms"`
	RetryJitterMs    int64    `json:"retry_jitter_ms"`
	Seed             int64    `json:"seed"`
}

// Reply is one line the program writes to its stdout.
type Reply struct {
	// InReplyTo is the ID of the request answered.
	InReplyTo int64  `json:"in_reply_to"`
	Type      string `json:"type"`
	// Owner is an opaque string the program chooses on acquire (typically
	// the value it stored in the lock); locktest sends it back.
	Owner string `json:"owner,omitempty"`
	// Token is the fencing token of an acquire (0: not fenced). The
	// protected resource refuses tokens lower than one it has seen.
	Token int64 `json:"token,omitempty"`
	// ValidityMs is how long the lease is still valid after an acquire or
	// renew; 0 or absent: the TTL minus the time the request took.
	ValidityMs int64 `json:"validity_ms,omitempty"`
	// Cmds counts the store commands the program sent for this request,
	// for the cost comparison across designs (optional).
	Cmds int64 `json:"cmds,omitempty"`
	// Error says why, for fail and error.
	Error string `json:"error,omitempty"`
	// Point is the checkpoint reached, for a Checkpoint line.
	Point string `json:"point,omitempty"`
}

// Ack is a line locktest writes to the program's stdin that answers one of
// its lines rather than asking anything: Continue after a Checkpoint.
type Ack struct {
	InReplyTo int64  `json:"in_reply_to"`
	Type      string `json:"type"`
}

// ParseReply decodes and checks one line from the program: a reply, or a
// Checkpoint line with a valid Point. Unknown fields are ignored so
// programs can add their own.
func ParseReply(line []byte) (Reply, error) {
	var raw struct {
		InReplyTo  *int64  `json:"in_reply_to"`
		Type       *string `json:"type"`
		Owner      string  `json:"owner"`
		Token      int64   `json:"token"`
		ValidityMs int64   `json:"validity_ms"`
		Cmds       int64   `json:"cmds"`
		Error      string  `json:"error"`
		Point      string  `json:"point"`
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Reply{}, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Reply{}, fmt.Errorf("not a valid JSON reply: %w", err)
	}
	switch {
	case raw.InReplyTo == nil:
		return Reply{}, errors.New("no in_reply_to")
	case raw.Type == nil:
		return Reply{}, errors.New("no type")
	case *raw.Type == Checkpoint:
		if err := CheckPoint(raw.Point); err != nil {
			return Reply{}, fmt.Errorf("checkpoint line: %w", err)
		}
		return Reply{InReplyTo: *raw.InReplyTo, Type: Checkpoint, Point: raw.Point}, nil
	case *raw.Type != OK && *raw.Type != Fail && *raw.Type != Error:
		return Reply{}, fmt.Errorf("type %q is none of ok, fail, error, checkpoint", *raw.Type)
	case raw.Token < 0 || raw.ValidityMs < 0 || raw.Cmds < 0:
		return Reply{}, errors.New("token, validity_ms and cmds must not be negative")
	}
	return Reply{InReplyTo: *raw.InReplyTo, Type: *raw.Type, Owner: raw.Owner, Token: raw.Token,
		ValidityMs: raw.ValidityMs, Cmds: raw.Cmds, Error: raw.Error}, nil
}
