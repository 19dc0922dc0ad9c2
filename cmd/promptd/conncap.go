package main

import "log/slog"

// connCap is the connection cap promptd serves with: PROMPTD_MAX_CONNS,
// lowered when the process's open-file limit could not hold that many
// connections beside the files and store connections promptd needs (a
// quarter of the limit, at most 1,024, is kept for them). Accepting past
// the limit fails (EMFILE) and Go's server then stops accepting for up to
// a second at a time, /healthz included; under the cap a new connection
// takes an idle one's place instead (api's connLimiter). Go raises the
// soft limit to the hard one at start (since Go 1.19), so the limit is
// the hard one that ulimit -Hn or the service manager sets. The outcome
// is logged.
func connCap(maxConns int, log *slog.Logger) int {
	files, ok := openFileLimit()
	if !ok {
		log.Info("connection cap", "max_conns", maxConns)
		return maxConns
	}
	reserve := min(1024, files/4)
	n := min(uint64(maxConns), files-reserve)
	if int(n) < maxConns {
		log.Warn("PROMPTD_MAX_CONNS lowered to fit the open-file limit; raise the limit (ulimit -n, LimitNOFILE=) to allow more",
			"max_conns", n, "configured", maxConns, "open_file_limit", files)
	} else {
		log.Info("connection cap", "max_conns", n, "open_file_limit", files)
	}
	return int(n)
}
