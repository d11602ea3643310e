package faults

import "github.com/locktest/locktest/history"

func init() {
	Register(&pauseClient{"pause-holder", "SIGSTOP the client holding the lock inside its critical section for the fault duration (> TTL), then SIGCONT",
		Traits{Aim: history.AimHolder, Targets: HolderTarget, Target: "holder", Servers: ServersUntouched, Seizes: SeizeClientProcess,
			Size: Size{Sweeps: []Vary{VaryPause, VaryLockDelay}, Moment: MomentGrant},
			// The client is stopped just after its grant: its lease is
			// nearly whole.
			Warn: warnPause("pause-holder", true)}})
}
