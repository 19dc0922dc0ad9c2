package check

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// imagesOf are the images of a compose file, a Dockerfile and a chart's
// values.yaml in dir, named by where they come from.
func imagesOf(t *testing.T, compose, dockerfile, values, appVersion string) map[string]string {
	t.Helper()
	out := map[string]string{}
	svc, err := composeImages(readFile(t, compose))
	if err != nil {
		t.Fatalf("%s: %v", compose, err)
	}
	for name, img := range svc {
		out[compose+": service "+name] = img
	}
	df, err := dockerfileImages(readFile(t, dockerfile))
	if err != nil {
		t.Fatalf("%s: %v", dockerfile, err)
	}
	for i, img := range df {
		out[dockerfile+": image "+string(rune('1'+i))] = img
	}
	img, err := chartImage(readFile(t, values), appVersion)
	if err != nil {
		t.Fatalf("%s: %v", values, err)
	}
	out[values+": image"] = img
	return out
}

func TestImages_areAllPinnedToExactVersions(t *testing.T) {
	images := imagesOf(t, repoPath("docker-compose.yml"), repoPath("Dockerfile"),
		repoPath("deploy", "helm", "promptd", "values.yaml"), chartMeta(t).AppVersion)
	// What the files name: a test that found nothing would pass on anything.
	var all []string
	for _, img := range images {
		all = append(all, img)
	}
	for _, want := range []string{"mysql:", "redis:", "haproxy:", "jaegertracing/jaeger:", "golang:", "promptd/promptd:"} {
		if !slices.ContainsFunc(all, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no %s image found among %v", want, all)
		}
	}
	for where, img := range images {
		if err := checkImageRef(img); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
}

// The control: testdata/floating names floating images of every kind the
// check must refuse, and each is refused.
func TestImages_floatingFixture_isRejectedImageByImage(t *testing.T) {
	dir := filepath.Join("testdata", "floating")
	images := imagesOf(t, filepath.Join(dir, "docker-compose.yml"), filepath.Join(dir, "Dockerfile"),
		filepath.Join(dir, "values.yaml"), "0.1.0")
	if len(images) != 11 {
		t.Errorf("found %d images in %s, want 11: %v", len(images), dir, images)
	}
	for where, img := range images {
		if err := checkImageRef(img); err == nil {
			t.Errorf("%s: %q accepted, want it refused as floating", where, img)
		} else {
			t.Logf("refused as it should be: %v", err)
		}
	}
}

func TestCheckImageRef(t *testing.T) {
	for ref, pinned := range map[string]bool{
		"mysql:8.4.6":                                   true,
		"golang:1.26.8-bookworm":                        true,
		"jaegertracing/jaeger:2.21.0":                   true,
		"registry.example:5000/p:1.2.3":                 true,
		"ghcr.io/o/p:v1.2.3-alpine3.20":                 true,
		"redis@sha256:" + strings.Repeat("a", 64):       true,
		"redis:7.4.6@sha256:" + strings.Repeat("0", 64): true,
		"mysql":                            false,
		"mysql:latest":                     false,
		"mysql:8":                          false,
		"mysql:8.4":                        false,
		"mysql:8.4-oracle":                 false,
		"golang:1.26-bookworm":             false,
		"golang:bookworm":                  false,
		"registry.example:5000/p":          false,
		"redis@sha256:abc":                 false,
		"haproxy:${V}":                     false,
		"gcr.io/distroless/static:nonroot": false,
	} {
		if err := checkImageRef(ref); (err == nil) != pinned {
			t.Errorf("checkImageRef(%q) = %v, want pinned=%v", ref, err, pinned)
		}
	}
}
