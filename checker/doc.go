// Package checker decides, with porcupine, whether a history is
// linearizable against two models: an owner-aware mutex over the lock
// operations (did two clients believe they held the lock at once?) and an
// atomic counter over the critical sections (did the protected data survive?).
//
// Each key's operations are cut, where every legal order must pass through
// one known state, into segments that porcupine checks apart and in
// parallel (segments.go): the verdict is the same as checking them whole,
// and a long history costs about linear, not quadratic, time and memory.
// A segment whose every outcome is known is decided by one sweep over it
// (sweep.go), which gives porcupine's verdict without its search; only the
// segments holding an op of unknown outcome are searched. The cuts are
// made as the ops come, in call order, and each segment is decided and
// dropped once its cut is certain (stream.go): a check holds each key's
// open segment and what its visualization may draw, not every segment.
//
// A checker timeout is Unknown, never Valid. Each Violation names the ops
// behind it and the faults active when it happened.
package checker
