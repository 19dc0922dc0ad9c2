package prompt

import "testing"

func TestBucket_apiTestVectors(t *testing.T) {
	if h := murmur3([]byte("hello")); h != 0x248bfa47 {
		t.Fatalf("murmur3(hello) = %#x", h)
	}
	for _, c := range []struct {
		id, key string
		want    int
	}{{"rel_1", "user-1", 771}, {"rel_1", "user-2", 8669}, {"rel_1", "alice@example.com", 34}, {"rel_7f3a", "session-42", 6397}} {
		if got := Bucket(c.id, c.key); got != c.want {
			t.Errorf("Bucket(%s:%s) = %d, want %d", c.id, c.key, got, c.want)
		}
	}
}

func TestDecide_overridesComeBeforeBuckets(t *testing.T) {
	// rel_1:user-1 is bucket 771.
	for _, c := range []struct {
		name       string
		bp         int
		candidate  []string
		baseline   []string
		wantArm    string
		wantReason string
	}{
		{"bucket below", 772, nil, nil, ArmCandidate, ReasonBucket},
		{"bucket equal", 771, nil, nil, ArmBaseline, ReasonBucket},
		{"forced candidate at 0", 0, []string{OverrideID("rel_1", "user-1")}, nil, ArmCandidate, ReasonOverride},
		{"forced baseline at 100", 10000, nil, []string{OverrideID("rel_1", "user-1")}, ArmBaseline, ReasonOverride},
		{"other ids only", 0, []string{OverrideID("rel_1", "user-2")}, nil, ArmBaseline, ReasonBucket},
	} {
		r := &Release{ID: "rel_1", BaselineVersion: 1, CandidateVersion: 2, BasisPoints: c.bp, Overrides: NewOverrides(c.candidate, c.baseline)}
		v, tr := Decide(r, nil, "user-1", "")
		if tr.Arm != c.wantArm || tr.Reason != c.wantReason || tr.Bucket == nil || *tr.Bucket != 771 ||
			(v == 2) != (c.wantArm == ArmCandidate) {
			t.Errorf("%s: version %d trace %+v", c.name, v, tr)
		}
	}
}

func TestDecide_revokedCandidateAndNoKey_serveTheBaseline(t *testing.T) {
	r := &Release{ID: "rel_1", BaselineVersion: 1, CandidateVersion: 2, BasisPoints: 10000}
	if v, tr := Decide(r, map[int]bool{2: true}, "user-1", ""); v != 1 || tr.Arm != ArmBaseline {
		t.Errorf("revoked candidate: %d %+v", v, tr)
	}
	if v, tr := Decide(r, nil, "", ""); v != 1 || tr.Bucket != nil || tr.Arm != ArmBaseline {
		t.Errorf("no key: %d %+v", v, tr)
	}
	r.Stickiness = StickySession
	if _, tr := Decide(r, nil, "user-1", "session-42"); tr.Bucket == nil || *tr.Bucket != Bucket("rel_1", "session-42") {
		t.Errorf("session stickiness buckets the session: %+v", tr)
	}
}

func TestPinned_namesTheArmOfThePinnedVersion(t *testing.T) {
	r := &Release{ID: "rel_1", BaselineVersion: 1, CandidateVersion: 2, BasisPoints: 10000}
	_, decided := Decide(r, nil, "user-1", "")
	if tr := Pinned(r, decided, 1); tr == nil || tr.Arm != ArmBaseline || tr.Reason != ReasonPinned {
		t.Errorf("pinned to the baseline: %+v", tr)
	}
	if decided.Reason != ReasonBucket {
		t.Error("Pinned changed the decision it was given")
	}
	if tr := Pinned(r, decided, 7); tr != nil {
		t.Errorf("pinned to neither arm: %+v", tr)
	}
	if tr := Pinned(nil, nil, 1); tr != nil {
		t.Errorf("no release: %+v", tr)
	}
}

func TestReleaseHeader_isAnRFC8941Dictionary(t *testing.T) {
	b := 771
	tr := &Trace{ID: "rel_1", Arm: ArmCandidate, Bucket: &b, Reason: ReasonBucket}
	if got := tr.ReleaseHeader(); got != `id="rel_1", arm=candidate, bucket=771, reason=bucket` {
		t.Errorf("header = %q", got)
	}
	tr.Bucket = nil
	if got := tr.ReleaseHeader(); got != `id="rel_1", arm=candidate, reason=bucket` {
		t.Errorf("header without bucket = %q", got)
	}
}
