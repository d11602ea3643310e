package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
)

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
}

// ParseReply decodes and checks one line from the program. Unknown fields
// are ignored so programs can add their own.
func ParseReply(line []byte) (Reply, error) {
	var raw struct {
		InReplyTo  *int64  `json:"in_reply_to"`
		Type       *string `json:"type"`
		Owner      string  `json:"owner"`
		Token      int64   `json:"token"`
		ValidityMs int64   `json:"validity_ms"`
		Cmds       int64   `json:"cmds"`
		Error      string  `json:"error"`
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
	case *raw.Type != OK && *raw.Type != Fail && *raw.Type != Error:
		return Reply{}, fmt.Errorf("type %q is none of ok, fail, error", *raw.Type)
	case raw.Token < 0 || raw.ValidityMs < 0 || raw.Cmds < 0:
		return Reply{}, errors.New("token, validity_ms and cmds must not be negative")
	}
	return Reply{InReplyTo: *raw.InReplyTo, Type: *raw.Type, Owner: raw.Owner, Token: raw.Token,
		ValidityMs: raw.ValidityMs, Cmds: raw.Cmds, Error: raw.Error}, nil
}
