package board

import "time"

// SetWaitHook calls f each time a claimer of s starts to wait.
func SetWaitHook(s *Service, f func(board string)) { s.waiting = f }

// SetClaimRecheck shortens how often the waiting claimers of s look again.
func SetClaimRecheck(s *Service, d time.Duration) { s.recheck = d }
