// Package protocol is the wire format between locktest and a lock client
// written in any language (the exec design): one JSON object per line, a
// request on the program's stdin, its reply on stdout. docs/protocol.md is
// the user's guide; the types here are the one definition both sides use.
package protocol
