// Package exposure counts who was served what: exposures (how many times
// a version, and a release arm, was served, per minute) and outcomes (how
// a served answer went, per release arm), the raw material of guarded
// releases.
//
// Exposures are aggregated in SQL per minute per (agent, env, release_id,
// version, arm): a batch is one upsert that adds its counts, so reports
// from many SDK processes and the server's own resolves (Counter, flushed
// in batches) sum exactly. A Prometheus counter follows the same labels
// (without release_id), its label set capped as a whole (Metrics). A
// reported item must name what was served (Record): the release of its
// agent and env with the arm's version, or the env's pointer version
// then; so reports cannot invent agents, envs, versions or releases.
//
// Retention: PruneExposures deletes minutes older than a cutoff
// (PROMPTD_EXPOSURE_RETENTION); PruneOutcomes deletes the outcomes of
// releases that ended before a cutoff (PROMPTD_OUTCOME_RETENTION), never
// a running or paused release's, which its guard reads from its start.
//
// Outcomes are stored one row per report, in table release_outcomes, which
// the guard reads:
//
//	id           auto id
//	agent, env   the release's agent and env
//	release_id   the release the caller was in
//	arm          "baseline" | "candidate"
//	version      the arm's version (checked against the release)
//	reason       "bucket" | "override" | "pinned" (the guard uses only bucket)
//	period       how many percent changes the release had before at_ms: 0
//	             while at its first percent, 1 after the first change, ...;
//	             the guard compares arms within one period, never across
//	period_bp    the release's basis points during that period
//	success      1 or 0
//	score        0..1, NULL when not reported
//	latency_ms   NULL when not reported
//	at_ms        when it happened (Unix ms), within the release's run
//	outcome_id   the reporter's id, NULL when none; unique per (agent, env,
//	             release_id): a repeat is a duplicate, not a row. Sweep sets
//	             it to NULL once the row is older than DedupeWindow (7 days),
//	             so an id may be used again after that; the row stays
//	token        the reporting token's name
//	created_at_ms when it was stored
//
// Neither knows HTTP: package api decodes requests and maps the errors.
package exposure
