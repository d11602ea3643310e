package runner

func Warnings(r Resolved) []string { return nil }
