package faults

import "testing"

// Only the control run may batch its clients' messages: every other fault
// stops, kills or skews a client, or waits for a lock moment (or may, with
// a target or a moment), and needs each invoke and grant as it happens.
func TestClientFree(t *testing.T) {
	for _, f := range All() {
		_, free := f.(ClientFree)
		if free != (f.Name() == "none") {
			t.Errorf("%s: ClientFree %v; only none is", f.Name(), free)
		}
		if NeedPromptClients([]Fault{f}) == free {
			t.Errorf("%s: NeedPromptClients %v, ClientFree %v", f.Name(), NeedPromptClients([]Fault{f}), free)
		}
	}
}
