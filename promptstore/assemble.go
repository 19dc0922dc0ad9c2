package promptstore

// Assembly limits (Limits): an assembled answer is sized before anything
// is rendered, and refused over AssembleMaxBytes.
const (
	DefaultAssembleMaxBytes = 8 << 20
	DefaultMaxHistoryTurns  = 1000
	MaxHistoryTurnsRequest  = 10000 // the largest max_history_turns a request may name
	DefaultDiffMaxBytes     = 1 << 20
	DefaultDiffMaxLines     = 20000
	DefaultDiffCacheBytes   = 16 << 20
	LimitAssembledBytes     = "assembled_bytes"
	LimitDiffBytes          = "diff_bytes"
	LimitDiffLines          = "diff_lines"
)

// Limits bound what one read may cost (Options.Limits); a zero field
// takes its default.
type Limits struct {
	// AssembleMaxBytes bounds an assembled answer: the JSON-encoded system
	// message, tools and model, and the history's turns
	// (PROMPTD_ASSEMBLE_MAX_BYTES, default 8 MiB). The history fills what
	// the rest leaves, newest turns first.
	AssembleMaxBytes int64
	// MaxHistoryTurns is the history's length when a request names none
	// and the most it may name (PROMPTD_ASSEMBLE_MAX_HISTORY_TURNS,
	// default 1000).
	MaxHistoryTurns int
	// DiffMaxBytes bounds the two pretty-printed configs of a diff
	// together (PROMPTD_DIFF_MAX_BYTES, default 1 MiB), DiffMaxLines their
	// lines together (PROMPTD_DIFF_MAX_LINES, default 20,000: the diff is
	// quadratic in lines at worst).
	DiffMaxBytes int64
	DiffMaxLines int
	// DiffCacheBytes bounds the cache of computed diffs
	// (PROMPTD_DIFF_CACHE_BYTES, default 16 MiB).
	DiffCacheBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.AssembleMaxBytes <= 0 {
		l.AssembleMaxBytes = DefaultAssembleMaxBytes
	}
	if l.MaxHistoryTurns <= 0 {
		l.MaxHistoryTurns = DefaultMaxHistoryTurns
	}
	if l.DiffMaxBytes <= 0 {
		l.DiffMaxBytes = DefaultDiffMaxBytes
	}
	if l.DiffMaxLines <= 0 {
		l.DiffMaxLines = DefaultDiffMaxLines
	}
	if l.DiffCacheBytes <= 0 {
		l.DiffCacheBytes = DefaultDiffCacheBytes
	}
	return l
}

// historyTurns is how many turns an assembly asks for: the request's
// number (0: none named), at most the configured maximum.
func (l Limits) historyTurns(requested int) int {
	if requested <= 0 || requested > l.MaxHistoryTurns {
		return l.MaxHistoryTurns
	}
	return requested
}
