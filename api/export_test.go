package api

// Statuses exposes the code table to the external tests.
func Statuses() map[string]int { return statuses }
