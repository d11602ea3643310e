package faults

import "testing"

// A fault that acts on links must never say it is LinkFree: its run would
// give the clients no links, and it would silently act on nothing.
func TestLinkFree(t *testing.T) {
	onLinks := map[string]bool{"latency": true, "partition": true, "reset-peer": true, "slow-resource-write": true,
		"failover": true, "redlock-clock-jump": true, "redlock-restart": true}
	for _, f := range All() {
		_, free := f.(LinkFree)
		if free && onLinks[f.Name()] {
			t.Errorf("%s acts on links and says it is LinkFree", f.Name())
		}
		if NeedClientLinks([]Fault{f}) != !free {
			t.Errorf("%s: NeedClientLinks %v, LinkFree %v", f.Name(), NeedClientLinks([]Fault{f}), free)
		}
	}
	none, err := Lookup("none")
	if err != nil {
		t.Fatal(err)
	}
	latency, err := Lookup("latency")
	if err != nil {
		t.Fatal(err)
	}
	if NeedClientLinks([]Fault{none}) || !NeedClientLinks([]Fault{none, latency}) {
		t.Error("a run needs links exactly when one of its faults is not LinkFree")
	}
}
