package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseReply(t *testing.T) {
	cases := []struct {
		line    string
		want    Reply
		wantErr string
	}{
		{`{"in_reply_to":3,"type":"ok","owner":"c1-2","token":7,"validity_ms":900,"cmds":2}`,
			Reply{InReplyTo: 3, Type: OK, Owner: "c1-2", Token: 7, ValidityMs: 900, Cmds: 2}, ""},
		{` {"in_reply_to":0,"type":"fail","error":"busy","extra":[1]}` + "\r",
			Reply{InReplyTo: 0, Type: Fail, Error: "busy"}, ""},
		{`{"in_reply_to":1,"type":"error"}`, Reply{InReplyTo: 1, Type: Error}, ""},
		{`hello`, Reply{}, "not a JSON object"},
		{``, Reply{}, "not a JSON object"},
		{`[1,2]`, Reply{}, "not a JSON object"},
		{`{"in_reply_to":1,"type":"ok"`, Reply{}, "not a valid JSON reply"},
		{`{"type":"ok"}`, Reply{}, "no in_reply_to"},
		{`{"in_reply_to":"1","type":"ok"}`, Reply{}, "not a valid JSON reply"},
		{`{"in_reply_to":1}`, Reply{}, "no type"},
		{`{"in_reply_to":1,"type":"granted"}`, Reply{}, `type "granted" is none of`},
		{`{"in_reply_to":1,"type":"ok","token":-1}`, Reply{}, "must not be negative"},
		{`{"type":"checkpoint","point":"after-set","in_reply_to":4}`, Reply{InReplyTo: 4, Type: Checkpoint, Point: "after-set"}, ""},
		{`{"type":"checkpoint","point":"vor dem Token","in_reply_to":4,"token":-1}`,
			Reply{InReplyTo: 4, Type: Checkpoint, Point: "vor dem Token"}, ""},
		{`{"type":"checkpoint","in_reply_to":4}`, Reply{}, "checkpoint line: a checkpoint name is empty"},
		{`{"type":"checkpoint","point":"a\u0007b","in_reply_to":4}`, Reply{}, "not printable"},
		{`{"type":"checkpoint","point":"` + strings.Repeat("x", MaxPoint+1) + `","in_reply_to":4}`, Reply{}, "longer than 64 bytes"},
		{`{"type":"checkpoint","point":"a,b","in_reply_to":4}`, Reply{}, "holds a comma"},
		{`{"type":"checkpoint","point":"x"}`, Reply{}, "no in_reply_to"},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got, err := ParseReply([]byte(tc.line))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestCheckPoint(t *testing.T) {
	cases := []struct{ name, wantErr string }{
		{"after-set", ""},
		{"before-token", ""},
		{"nach dem SET", ""},
		{"é:1/2", ""},
		{"", "empty"},
		{" lead", "begins or ends with a blank"},
		{"trail\t", "blank"},
		{"tab\tin", "not printable"},
		{"nl\n", "blank"},
		{"a,b", "comma"},
		{"<script>", ""}, // printable: shown escaped, not refused
		{strings.Repeat("é", 33), "longer than"},
		{"\xff", "UTF-8"},
	}
	for _, tc := range cases {
		err := CheckPoint(tc.name)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("CheckPoint(%q) = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestRequestWire pins the field names docs/protocol.md promises.
func TestRequestWire(t *testing.T) {
	cases := []struct {
		req  Request
		want string
	}{
		{Request{ID: 0, Type: Init, TimeoutMs: 8000, TTLMs: 1000, Setup: &Setup{Client: 0, Nodes: []string{"127.0.0.1:1"},
			AcquireTimeoutMs: 5000, IOTimeoutMs: 500, RetryMinMs: 20, RetryJitterMs: 30, Seed: 1}},
			`{"id":0,"type":"init","timeout_ms":8000,"ttl_ms":1000,"client":0,"nodes":["127.0.0.1:1"],"acquire_timeout_ms":5000,"io_timeout_ms":500,"retry_min_ms":20,"retry_jitter_ms":30,"seed":1}`},
		{Request{ID: 4, Type: Acquire, Key: "lock-0", TimeoutMs: 5000, TTLMs: 1000},
			`{"id":4,"type":"acquire","key":"lock-0","timeout_ms":5000,"ttl_ms":1000}`},
		{Request{ID: 5, Type: Release, Key: "lock-0", TimeoutMs: 500, Owner: "c0-1", Token: 9},
			`{"id":5,"type":"release","key":"lock-0","timeout_ms":500,"owner":"c0-1","token":9}`},
	}
	if b, err := json.Marshal(Ack{InReplyTo: 4, Type: Continue}); err != nil || string(b) != `{"in_reply_to":4,"type":"continue"}` {
		t.Fatalf("continue line: got %s, %v", b, err)
	}
	for _, tc := range cases {
		b, err := json.Marshal(tc.req)
		if err != nil || string(b) != tc.want {
			t.Fatalf("got %s, %v\nwant %s", b, err, tc.want)
		}
	}
}
