package faults

func init() {
	Register(pauseClient{"pause-holder", HolderTarget, "holder",
		"SIGSTOP the client holding the lock inside its critical section for the fault duration (> TTL), then SIGCONT"})
}
