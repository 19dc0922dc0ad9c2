package ociimage

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entrypoint is where the image keeps promptd, and what it runs.
const Entrypoint = "/usr/local/bin/promptd"

// Spec is what a release image is built from.
type Spec struct {
	Version  string    // the VERSION file's, e.g. 0.1.0
	Revision string    // the full commit hash
	Source   string    // the repository's URL
	Created  time.Time // SOURCE_DATE_EPOCH: every timestamp in the image
	CACerts  []byte    // a PEM bundle, installed as /etc/ssl/certs/ca-certificates.crt
	Targets  []Target  // one image each; several make an index
}

// Target is one platform's static binaries.
type Target struct {
	OS, Arch  string
	Promptd   []byte
	Promptctl []byte // optional
}

// Labels are the image's OCI labels (also the manifests' annotations).
func (s Spec) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.description": "promptd: prompt configs and session coordination for fleets of AI agents",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.source":      s.Source,
		"org.opencontainers.image.title":       "promptd",
		"org.opencontainers.image.version":     s.Version,
	}
}

// Build makes the image: one per target, under an index when there are
// several targets.
func Build(s Spec) (partial.Describable, error) {
	if len(s.Targets) == 0 {
		return nil, errors.New("no targets")
	}
	if s.Version == "" || s.Revision == "" || s.Created.IsZero() || len(s.CACerts) == 0 {
		return nil, errors.New("spec needs a version, a revision, a created time and CA certificates")
	}
	var imgs []v1.Image
	for _, t := range s.Targets {
		if t.OS != "linux" || len(t.Promptd) == 0 {
			return nil, fmt.Errorf("target %s/%s: needs a linux promptd binary", t.OS, t.Arch)
		}
		l, err := layer(rootfs(t, s.CACerts), s.Created)
		if err != nil {
			return nil, err
		}
		img, err := image(s, t, l)
		if err != nil {
			return nil, fmt.Errorf("target %s/%s: %w", t.OS, t.Arch, err)
		}
		imgs = append(imgs, img)
	}
	if len(imgs) == 1 {
		return imgs[0], nil
	}
	var adds []mutate.IndexAddendum
	for i, img := range imgs {
		adds = append(adds, mutate.IndexAddendum{Add: plainImage{img}, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: s.Targets[i].OS, Architecture: s.Targets[i].Arch},
		}})
	}
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	return mutate.Annotations(idx, s.Labels()).(v1.ImageIndex), nil
}

// image is one target's image: the layer l and the run configuration.
func image(s Spec, t Target, l v1.Layer) (v1.Image, error) {
	created := v1.Time{Time: s.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:     l,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   created,
			CreatedBy: "promptd release (tools/release/cmd/ociimage)",
			Comment:   "static promptd and promptctl, CA certificates, /data for the non-root user",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = t.OS, t.Arch, created
	cf.Config = v1.Config{
		User:       strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
		Entrypoint: []string{Entrypoint},
		Env: []string{
			"PATH=/usr/local/bin",
			// promptd's default 127.0.0.1:8080 is unreachable from outside a container.
			"PROMPTD_ADDR=0.0.0.0:8080",
			"PROMPTD_DATA_DIR=/data",
		},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Volumes:      map[string]struct{}{"/data": {}},
		WorkingDir:   "/",
		Labels:       s.Labels(),
		// Docker honours this; OCI runtimes ignore it. promptd probes itself
		// (the image has no shell or curl).
		Healthcheck: &v1.HealthConfig{
			Test:        []string{"CMD", Entrypoint, "healthcheck", "--ready"},
			Interval:    10 * time.Second,
			Timeout:     5 * time.Second,
			StartPeriod: 10 * time.Second,
			Retries:     3,
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, s.Labels()).(v1.Image), nil
}

// plainImage is an image whose descriptor in an index has no artifactType.
// go-containerregistry fills it with the config's media type, which the
// image spec reserves for artifacts, and older containers/image (skopeo
// 1.9) then rewrites the index rather than keep it, changing its digest.
type plainImage struct{ v1.Image }

func (plainImage) ArtifactType() (string, error) { return "", nil }
