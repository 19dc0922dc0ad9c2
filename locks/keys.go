package locks

import (
	"fmt"
	"strings"
)

// KindJob is the kind of the lock of a cluster-singleton job run
// (RunExclusive). The other kinds belong to the packages that take them
// (promptstore's "config" and "release", session's "session", leases'
// "lease"): locks knows none of them.
const KindJob = "job"

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

// Key is the lock key P:lock:<kind>:{<id>}, with ":"-joined suffix parts
// after the hash tag: the id is the Redis Cluster hash tag, so a lock and
// its fence counter share a slot. kind is 1..16 lower-case letters; id and
// the suffixes are checked so that no caller input can break the key
// (braces, spaces, control characters; ids may hold ':' and '/').
func (k Keys) Key(kind, id string, suffix ...string) (string, error) {
	if kind == "" || len(kind) > 16 || strings.Trim(kind, "abcdefghijklmnopqrstuvwxyz") != "" {
		return "", &InvalidIDError{Field: "kind", Reason: fmt.Sprintf("lock kind %q is not 1..16 lower-case letters", kind)}
	}
	if err := ValidateResource(kind, id); err != nil {
		return "", err
	}
	key := k.prefix() + ":lock:" + kind + ":{" + id + "}"
	for _, p := range suffix {
		if err := ValidateID(kind, p); err != nil {
			return "", err
		}
		key += ":" + p
	}
	return key, nil
}

// Job is the key of one run of a cluster-singleton job.
func (k Keys) Job(job string) (string, error) {
	if err := ValidateID("job", job); err != nil {
		return "", err
	}
	return k.Key(KindJob, job)
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
