package faults

import "github.com/locktest/locktest/cluster"

// reply-latency delays what servers answer, not what clients ask: the
// server acts on time and the client learns of it late, so a lock that
// believes a grant whose reply arrived after its lease shows here, while a
// lock that measures its validity from before it asked gives it back.
func init() { Register(latency{"reply-latency", "replies", cluster.Replies}) }
