package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// Buckets is the bucket space: basis points of a percent.
const Buckets = 10000

// Stickiness says which caller key a release buckets.
const (
	StickyUser    = "user"
	StickySession = "session"
)

// Arms and reasons of a release trace.
const (
	ArmBaseline  = "baseline"
	ArmCandidate = "candidate"

	ReasonBucket   = "bucket"   // the caller's bucket decided
	ReasonOverride = "override" // an override list named the caller
	ReasonPinned   = "pinned"   // the caller's session is pinned
)

// Trace explains a release's part in a resolution.
type Trace struct {
	ID      string      `json:"id"`
	Arm     string      `json:"arm"` // "baseline" or "candidate"
	Bucket  *int        `json:"bucket"`
	Percent json.Number `json:"percent"`
	Reason  string      `json:"reason"` // "bucket", "override" or "pinned"
}

// Release is what the arm decision needs of an active (running or
// paused) release.
type Release struct {
	ID               string
	BaselineVersion  int
	CandidateVersion int
	BasisPoints      int
	Stickiness       string // StickyUser (also "") or StickySession
	Overrides        *Overrides
}

// Overrides are a release's forced arms: sets of OverrideID values.
// The zero value and nil force nothing.
type Overrides struct {
	arm map[string]string
}

// NewOverrides builds the override sets from the lists of OverrideID
// values (hex, any case). An id on both lists is the caller's
// validation to refuse; here the candidate list wins.
func NewOverrides(candidate, baseline []string) *Overrides {
	o := &Overrides{arm: make(map[string]string, len(candidate)+len(baseline))}
	for _, id := range baseline {
		o.arm[strings.ToLower(id)] = ArmBaseline
	}
	for _, id := range candidate {
		o.arm[strings.ToLower(id)] = ArmCandidate
	}
	return o
}

// Len is how many ids the sets hold.
func (o *Overrides) Len() int {
	if o == nil {
		return 0
	}
	return len(o.arm)
}

// Lookup is the arm the sets force on a caller key of release
// releaseID, "" for none.
func (o *Overrides) Lookup(releaseID, key string) string {
	if o.Len() == 0 {
		return ""
	}
	return o.arm[OverrideID(releaseID, key)]
}

// OverrideID is how an override names a caller: hex SHA-256 of
// "<release_id>:<key>", so a release holds no user id in the clear.
func OverrideID(releaseID, key string) string {
	sum := sha256.Sum256([]byte(releaseID + ":" + key))
	return hex.EncodeToString(sum[:])
}

// Bucket is murmur3_x86_32(utf8("<release_id>:<key>"), seed 0) mod 10000.
func Bucket(releaseID, key string) int {
	return int(murmur3([]byte(releaseID+":"+key)) % Buckets)
}

// Key is the caller key a release buckets: the user id, or the session id
// for session stickiness or when there is no user id; "" for neither.
func (r *Release) Key(userID, sessionID string) string {
	if r.Stickiness == StickySession || userID == "" {
		return sessionID
	}
	return userID
}

// Decide puts a caller into a release's arm: an override list naming the
// caller's key first (reason "override"), else candidate iff bucket <
// basis points (reason "bucket"); no key: the baseline, bucket nil. A
// candidate revoked in the env (revoked[candidate]) serves the baseline,
// the trace saying so. It returns the version served and the trace.
func Decide(r *Release, revoked map[int]bool, userID, sessionID string) (int, *Trace) {
	t := &Trace{ID: r.ID, Arm: ArmBaseline, Percent: json.Number(FormatPercent(r.BasisPoints)), Reason: ReasonBucket}
	if key := r.Key(userID, sessionID); key != "" {
		b := Bucket(r.ID, key)
		t.Bucket = &b
		if arm := r.Overrides.Lookup(r.ID, key); arm != "" {
			t.Arm, t.Reason = arm, ReasonOverride
		} else if b < r.BasisPoints {
			t.Arm = ArmCandidate
		}
	}
	version := r.BaselineVersion
	if t.Arm == ArmCandidate {
		version = r.CandidateVersion
	}
	if t.Arm == ArmCandidate && revoked[r.CandidateVersion] {
		t.Arm, version = ArmBaseline, r.BaselineVersion
	}
	return version, t
}

// Pinned is the trace of a session pinned to version while a release is
// active: decided is what Decide said for the caller; the trace names the
// arm of the pinned version, reason "pinned". A version that is neither
// arm gets no trace (nil): the release had no part in it.
func Pinned(r *Release, decided *Trace, version int) *Trace {
	if r == nil || decided == nil {
		return nil
	}
	t := *decided
	t.Reason = ReasonPinned
	switch version {
	case r.CandidateVersion:
		t.Arm = ArmCandidate
	case r.BaselineVersion:
		t.Arm = ArmBaseline
	default:
		return nil
	}
	return &t
}

// FormatPercent renders basis points as the shortest decimal: 1250 ->
// "12.5", 1000 -> "10", 1 -> "0.01".
func FormatPercent(bp int) string {
	s := strconv.Itoa(bp / 100)
	if f := bp % 100; f != 0 {
		fs := strconv.Itoa(f)
		if f < 10 {
			fs = "0" + fs
		}
		s += "." + strings.TrimRight(fs, "0")
	}
	return s
}
