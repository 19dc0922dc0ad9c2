package locks

import (
	"errors"
	"strconv"
	"strings"
)

// etcdValue is the value of a lock key on etcd:
//
//	<owner> <count> <nonce> <fence> <floor> <since µs> <lease s> <holder>
//
// owner is '<length of the token>:<token>' (as in acquire.lua), so tokens
// compare exactly whatever bytes they hold; nonce is '-' until a re-entry,
// or a release of one of several holds, records its own; holder runs to
// the end. fence is 0 in the value a grant writes: the grant's revision is
// known only once it commits, and the fence is then max(floor, fence_base
// + the key's mod_revision). Every later write of the key (a re-entry, a
// release of one hold, a move to another lease) writes the fence itself.
// floor is max(previous fence + 1, min fence + 1); lease is the TTL in
// seconds of the etcd lease the key is on.
//
// A free key whose fence is above what fence_base + revision will give is
// kept as a tombstone "-<fence>" on no lease, so the next grant is above it.
type etcdValue struct {
	token  string
	count  int
	nonce  string // "" when none
	fence  int64  // 0: max(floor, fence_base + mod_revision)
	floor  int64
	since  int64 // µs
	ttlSec int64
	holder string
}

var errBadValue = errors.New("locks: etcd: malformed lock value")

func (v etcdValue) encode() string {
	var b strings.Builder
	b.Grow(len(v.token) + len(v.holder) + 64)
	b.WriteString(strconv.Itoa(len(v.token)))
	b.WriteByte(':')
	b.WriteString(v.token)
	nonce := v.nonce
	if nonce == "" {
		nonce = "-"
	}
	for _, f := range []string{strconv.Itoa(v.count), nonce, strconv.FormatInt(v.fence, 10),
		strconv.FormatInt(v.floor, 10), strconv.FormatInt(v.since, 10), strconv.FormatInt(v.ttlSec, 10)} {
		b.WriteByte(' ')
		b.WriteString(f)
	}
	b.WriteByte(' ')
	b.WriteString(v.holder)
	return b.String()
}

// decodeEtcdValue parses a lock value; tomb is the fence of a tombstone.
func decodeEtcdValue(s []byte) (v etcdValue, tomb int64, err error) {
	if len(s) > 0 && s[0] == '-' {
		tomb, err = strconv.ParseInt(string(s[1:]), 10, 64)
		if err != nil {
			return v, 0, errBadValue
		}
		return v, tomb, nil
	}
	colon := -1
	for i, c := range s {
		if c == ':' {
			colon = i
			break
		}
	}
	if colon < 1 {
		return v, 0, errBadValue
	}
	tl, err := strconv.Atoi(string(s[:colon]))
	end := colon + 1 + tl
	if err != nil || tl < 0 || end >= len(s) || s[end] != ' ' {
		return v, 0, errBadValue
	}
	v.token = string(s[colon+1 : end])
	parts := strings.SplitN(string(s[end+1:]), " ", 7)
	if len(parts) != 7 {
		return v, 0, errBadValue
	}
	var errs [5]error
	v.count, errs[0] = strconv.Atoi(parts[0])
	if parts[1] != "-" {
		v.nonce = parts[1]
	}
	v.fence, errs[1] = strconv.ParseInt(parts[2], 10, 64)
	v.floor, errs[2] = strconv.ParseInt(parts[3], 10, 64)
	v.since, errs[3] = strconv.ParseInt(parts[4], 10, 64)
	v.ttlSec, errs[4] = strconv.ParseInt(parts[5], 10, 64)
	if errors.Join(errs[:]...) != nil {
		return v, 0, errBadValue
	}
	v.holder = parts[6]
	return v, 0, nil
}

// fenceAt is the value's fence given fence_base and the key's mod_revision.
func (v etcdValue) fenceAt(base, modRev int64) int64 {
	if v.fence != 0 {
		return v.fence
	}
	return max(v.floor, base+modRev)
}

// encodeEtcdKey maps a lock key to its etcd key: '%' and '/' are escaped,
// so no lock key can reach another's or the P/... keys beside them.
func encodeEtcdKey(key string) string {
	if !strings.ContainsAny(key, "%/") {
		return key
	}
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '%':
			b.WriteString("%25")
		case '/':
			b.WriteString("%2F")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
