package locks

import (
	"fmt"
	"strings"

	"github.com/promptd/promptd/ident"
)

// KindJob is the kind of the lock of a cluster-singleton job run
// (RunExclusive). The other kinds belong to the packages that take them
// (promptstore's "config" and "release", session's "session", leases'
// "lease"): locks knows none of them.
const KindJob = "job"

// Keys builds lock keys under a prefix (PROMPTD_KEY_PREFIX, default "prompt").
// Every id is validated (package ident's rule), so user input never
// reaches Redis unchecked.
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
		return "", &ident.InvalidError{Field: "kind", Reason: fmt.Sprintf("lock kind %q is not 1..16 lower-case letters", kind)}
	}
	if err := ident.ValidateResource(kind, id); err != nil {
		return "", err
	}
	key := k.prefix() + ":lock:" + kind + ":{" + id + "}"
	for _, p := range suffix {
		if err := ident.Validate(kind, p); err != nil {
			return "", err
		}
		key += ":" + p
	}
	return key, nil
}

// Job is the key of one run of a cluster-singleton job.
func (k Keys) Job(job string) (string, error) {
	if err := ident.Validate("job", job); err != nil {
		return "", err
	}
	return k.Key(KindJob, job)
}

// FenceKey is the fence counter beside a lock key (same hash tag).
func FenceKey(lockKey string) string { return lockKey + ":fence" }

// ReleasedChannel is the pub/sub channel on which releases are announced.
func (k Keys) ReleasedChannel() string { return k.prefix() + ":lock:released" }
