package ociimage

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
)

const rev = "0123456789abcdef0123456789abcdef01234567"

// spec is a two-platform release of small stand-in binaries.
func spec(created time.Time) Spec {
	return Spec{
		Version: "9.8.7", Revision: rev, Source: "https://example.com/promptd", Created: created,
		CACerts: []byte("-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n"),
		Targets: []Target{
			{OS: "linux", Arch: "amd64", Promptd: []byte("\x7fELF promptd amd64"), Promptctl: []byte("\x7fELF promptctl amd64")},
			{OS: "linux", Arch: "arm64", Promptd: []byte("\x7fELF promptd arm64 (longer)")},
		},
	}
}

var epoch = time.Unix(1796320469, 0).UTC()

// archive builds s and writes it as a layout tarball into the test's
// directory, returning the built digest, the file and its bytes.
func archive(t *testing.T, img partial.Describable, name string) (v1.Hash, string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteArchive(&buf, img, "9.8.7", epoch); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d, file, buf.Bytes()
}

func build(t *testing.T, s Spec) partial.Describable {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func readBack(t *testing.T, file string) Report {
	t.Helper()
	p, err := ReadArchive(file, filepath.Join(t.TempDir(), "layout"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Describe(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuild_twice_givesTheSameDigestAndTarball(t *testing.T) {
	d1, _, b1 := archive(t, build(t, spec(epoch)), "a.tar")
	d2, _, b2 := archive(t, build(t, spec(epoch)), "b.tar")
	if d1 != d2 || !bytes.Equal(b1, b2) {
		t.Fatalf("two builds: %s (%d bytes) and %s (%d bytes)", d1, len(b1), d2, len(b2))
	}
	// Control: the digest does depend on the inputs, here the created time.
	d3, _, _ := archive(t, build(t, spec(epoch.Add(time.Second))), "c.tar")
	if d3 == d1 {
		t.Fatalf("a created time a second later gave the same digest %s", d1)
	}
}

func TestArchive_readBack_isANonRootReleaseImageOfBothPlatforms(t *testing.T) {
	s := spec(epoch)
	d, file, _ := archive(t, build(t, s), "img.tar")
	r := readBack(t, file)
	if r.Digest != d || r.Ref != "9.8.7" || r.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("read back digest %s ref %q %s; built %s", r.Digest, r.Ref, r.MediaType, d)
	}
	if err := Check(r, "9.8.7", rev); err != nil {
		t.Fatal(err)
	}
	if len(r.Images) != 2 || r.Images[0].Platform != "linux/amd64" || r.Images[1].Platform != "linux/arm64" {
		t.Fatalf("images %+v", r.Images)
	}
	for i, ir := range r.Images {
		c := ir.Config
		if c.Config.User != "65532:65532" || strings.Join(c.Config.Entrypoint, " ") != "/usr/local/bin/promptd" {
			t.Errorf("%s: user %q entrypoint %q", ir.Platform, c.Config.User, c.Config.Entrypoint)
		}
		if !c.Created.Equal(epoch) || c.Config.Labels["org.opencontainers.image.created"] != "2026-12-03T17:54:29Z" {
			t.Errorf("%s: created %s, label %q", ir.Platform, c.Created, c.Config.Labels["org.opencontainers.image.created"])
		}
		for k, v := range map[string]string{"version": "9.8.7", "revision": rev, "licenses": "Apache-2.0",
			"source": "https://example.com/promptd", "title": "promptd"} {
			if got := c.Config.Labels["org.opencontainers.image."+k]; got != v {
				t.Errorf("%s: label %s = %q, want %q", ir.Platform, k, got, v)
			}
		}
		if len(ir.Layers) != 1 {
			t.Fatalf("%s: %d layers", ir.Platform, len(ir.Layers))
		}
		got := map[string]File{}
		for _, f := range ir.Layers[0].Files {
			got[f.Name] = f
		}
		bin := got["usr/local/bin/promptd"]
		if bin.Mode != 0o755 || bin.UID != 0 || bin.GID != 0 || bin.Size != int64(len(s.Targets[i].Promptd)) {
			t.Errorf("%s: promptd is %s", ir.Platform, bin)
		}
		if d := got["data/"]; d.UID != UID || !d.Mode.IsDir() {
			t.Errorf("%s: /data is %s", ir.Platform, d)
		}
		if _, ok := got["etc/ssl/certs/ca-certificates.crt"]; !ok {
			t.Errorf("%s: no CA certificates", ir.Platform)
		}
		if _, ok := got["usr/local/bin/promptctl"]; ok != (s.Targets[i].Promptctl != nil) {
			t.Errorf("%s: promptctl present %v", ir.Platform, ok)
		}
	}
}

func TestBuild_oneTarget_isAnImageNotAnIndex(t *testing.T) {
	s := spec(epoch)
	s.Targets = s.Targets[:1]
	_, file, _ := archive(t, build(t, s), "one.tar")
	r := readBack(t, file)
	if r.MediaType != "application/vnd.oci.image.manifest.v1+json" || len(r.Images) != 1 {
		t.Fatalf("%s with %d images", r.MediaType, len(r.Images))
	}
	if err := Check(r, "9.8.7", rev); err != nil {
		t.Fatal(err)
	}
}

// Control: Check refuses an image that runs as root, read back the same way.
func TestCheck_rootUser_isRefused(t *testing.T) {
	s := spec(epoch)
	s.Targets = s.Targets[:1]
	img := build(t, s).(v1.Image)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	c.User = "0:0"
	root, err := mutate.Config(img, c)
	if err != nil {
		t.Fatal(err)
	}
	_, file, _ := archive(t, root, "root.tar")
	err = Check(readBack(t, file), "9.8.7", rev)
	if err == nil || !strings.Contains(err.Error(), `runs as "0:0"`) {
		t.Fatalf("Check of a root image = %v", err)
	}
	// And of a different version than the labels say.
	_, file, _ = archive(t, img, "ok.tar")
	if err := Check(readBack(t, file), "9.8.8", rev); err == nil {
		t.Fatal("Check with another version passed")
	}
}

// Control: Check refuses a binary that is not executable.
func TestCheck_binaryNotExecutable_isRefused(t *testing.T) {
	s := spec(epoch)
	tg := s.Targets[0]
	es := rootfs(tg, s.CACerts)
	for i := range es {
		if es[i].name == "usr/local/bin/promptd" {
			es[i].mode = 0o644
		}
	}
	l, err := layer(es, epoch)
	if err != nil {
		t.Fatal(err)
	}
	img, err := image(s, tg, l)
	if err != nil {
		t.Fatal(err)
	}
	_, file, _ := archive(t, img, "noexec.tar")
	err = Check(readBack(t, file), "9.8.7", rev)
	if err == nil || !strings.Contains(err.Error(), "want a regular file -rwxr-xr-x 0:0") {
		t.Fatalf("Check of a 0644 binary = %v", err)
	}
}

func TestRoots_arePEMCertificatesThatParse(t *testing.T) {
	b := Roots()
	n := 0
	for len(b) > 0 {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			t.Fatalf("not PEM after %d certificates", n)
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			t.Fatalf("certificate %d: %v", n, err)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("%d roots; the NSS store has over 100", n)
	}
	if !bytes.Equal(Roots(), Roots()) {
		t.Fatal("two calls differ")
	}
}

// An index whose descriptors carry artifactType is rewritten (new digest)
// by skopeo 1.9 on copy; Build's carry none.
func TestBuild_indexDescriptors_haveNoArtifactType(t *testing.T) {
	raw := func(idx v1.ImageIndex) string {
		b, err := idx.RawManifest()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	idx := build(t, spec(epoch)).(v1.ImageIndex)
	if s := raw(idx); strings.Contains(s, "artifactType") || !strings.Contains(s, `"platform"`) {
		t.Fatalf("index %s", s)
	}
	// Control: go-containerregistry's own descriptor of the same image has one.
	img, err := idx.Image(mustManifests(t, idx)[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	plain := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img.(plainImage).Image})
	if s := raw(plain); !strings.Contains(s, `"artifactType"`) {
		t.Fatalf("control index has no artifactType: %s", s)
	}
}

func mustManifests(t *testing.T, idx v1.ImageIndex) []v1.Descriptor {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return im.Manifests
}

func TestUnpack_writesThePlatformsBinaryExecutable(t *testing.T) {
	s := spec(epoch)
	_, file, _ := archive(t, build(t, s), "img.tar")
	p, err := ReadArchive(file, filepath.Join(t.TempDir(), "layout"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := Unpack(p, "linux/arm64", root); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "usr/local/bin/promptd"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "usr/local/bin/promptd"))
	if fi.Mode().Perm() != 0o755 || string(b) != string(s.Targets[1].Promptd) {
		t.Fatalf("promptd %s %q", fi.Mode(), b)
	}
	if err := Unpack(p, "linux/s390x", t.TempDir()); err == nil {
		t.Fatal("unpacked a platform the index does not have")
	}
}
