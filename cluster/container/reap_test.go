package container

import (
	"os"
	"testing"
)

// The sweep removes only what a dead coordinator on this host owned: a
// live one (this process), or one on another host, keeps its containers.
func TestOwnerAlive(t *testing.T) {
	host, _ := os.Hostname()
	for _, tc := range []struct {
		owner string
		alive bool
	}{
		{ownerID(), true},
		{host + ":1:0", false}, // pid 1 exists, but started at another time
		{host + ":999999999:5", false},
		{"elsewhere:1:1", true},
		{"garbage", false},
	} {
		if got := ownerAlive(tc.owner); got != tc.alive {
			t.Errorf("ownerAlive(%q) = %v, want %v", tc.owner, got, tc.alive)
		}
	}
}
