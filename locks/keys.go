package locks

import (
	"fmt"
	"strings"
)

// Kinds of lock, the <kind> part of P:lock:<kind>:{<id>}.
const (
	KindConfig  = "config"
	KindRelease = "release"
	KindSession = "session"
	KindLease   = "lease"
	KindJob     = "job"
)

// Keys builds lock keys under a prefix (PROMPTD_KEY_PREFIX, default "prompt").
// Every id is validated, so user input never reaches Redis unchecked.
type Keys struct {
	Prefix string
}

// DefaultPrefix is the key prefix when none is configured.
const DefaultPrefix = "prompt"

func (k Keys) prefix() string {
	if k.Prefix == "" {
		return DefaultPrefix
	}
	return k.Prefix
}

// Config is the key taken while creating a version of agent.
func (k Keys) Config(agent string) (string, error) {
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	return k.prefix() + ":lock:" + KindConfig + ":{" + agent + "}", nil
}

// Release is the key for pointer switches, release transitions and
// revocations of agent in env. The hash tag is the agent, so all envs of an
// agent share a slot.
func (k Keys) Release(agent, env string) (string, error) {
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	if err := ValidateID("env", env); err != nil {
		return "", err
	}
	return k.prefix() + ":lock:" + KindRelease + ":{" + agent + "}:" + env, nil
}

// Session is the key of a session lease.
func (k Keys) Session(sessionID string) (string, error) {
	if err := ValidateID("session_id", sessionID); err != nil {
		return "", err
	}
	return k.prefix() + ":lock:" + KindSession + ":{" + sessionID + "}", nil
}

// Lease is the key of a generic lease on a business resource.
func (k Keys) Lease(resource string) (string, error) {
	if err := ValidateResource("resources", resource); err != nil {
		return "", err
	}
	return k.prefix() + ":lock:" + KindLease + ":{" + resource + "}", nil
}

// Job is the key of one run of a cluster-singleton job.
func (k Keys) Job(job string) (string, error) {
	if err := ValidateID("job", job); err != nil {
		return "", err
	}
	return k.prefix() + ":lock:" + KindJob + ":{" + job + "}", nil
}

// FenceKey is the fence counter beside a lock key (same hash tag).
func FenceKey(lockKey string) string { return lockKey + ":fence" }

// ReleasedChannel is the pub/sub channel on which releases are announced.
func (k Keys) ReleasedChannel() string { return k.prefix() + ":lock:released" }

// InvalidIDError names the field whose value is not a valid identifier.
type InvalidIDError struct {
	Field  string
	Reason string
}

func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("locks: invalid %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidKey) true.
func (e *InvalidIDError) Is(target error) bool { return target == ErrInvalidKey }

// ValidateID checks the identifier rule of the API (agent, env, session_id,
// state keys): 1..128 characters of [A-Za-z0-9._-], the first alphanumeric.
func ValidateID(field, s string) error {
	return validate(field, s, 128, "")
}

// ValidateResource checks a generic lease resource name: the identifier rule
// plus ':' and '/', up to 256 characters.
func ValidateResource(field, s string) error {
	return validate(field, s, 256, ":/")
}

func validate(field, s string, max int, extra string) error {
	switch {
	case s == "":
		return &InvalidIDError{Field: field, Reason: "empty"}
	case len(s) > max:
		return &InvalidIDError{Field: field, Reason: fmt.Sprintf("longer than %d characters", max)}
	case !alnum(s[0]):
		return &InvalidIDError{Field: field, Reason: "must start with a letter or digit"}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if alnum(c) || c == '.' || c == '_' || c == '-' || strings.IndexByte(extra, c) >= 0 {
			continue
		}
		return &InvalidIDError{Field: field, Reason: fmt.Sprintf("character %q at %d is not allowed", c, i)}
	}
	return nil
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
