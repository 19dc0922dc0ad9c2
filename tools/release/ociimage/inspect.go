package ociimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Report is what an image layout holds, as read back.
type Report struct {
	Ref       string        // index.json's ref name
	Digest    v1.Hash       // what to pin: the index's, or the only image's
	MediaType string        // of Digest's manifest
	Images    []ImageReport // one per platform
}

// ImageReport is one platform's image.
type ImageReport struct {
	Platform string // os/arch
	Digest   v1.Hash
	Config   v1.ConfigFile
	Layers   []LayerReport
}

// LayerReport is one layer and its entries.
type LayerReport struct {
	Digest, DiffID v1.Hash
	Size           int64
	Files          []File
}

// File is one entry of a layer.
type File struct {
	Name     string
	Mode     fs.FileMode
	UID, GID int
	Size     int64
}

func (f File) String() string {
	return fmt.Sprintf("%s %d:%d %8d %s", f.Mode, f.UID, f.GID, f.Size, f.Name)
}

// Describe reads the image layout at p.
func Describe(p layout.Path) (Report, error) {
	top, err := p.ImageIndex()
	if err != nil {
		return Report{}, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return Report{}, err
	}
	if len(im.Manifests) != 1 {
		return Report{}, fmt.Errorf("index.json names %d manifests, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	r := Report{Ref: d.Annotations[RefName], Digest: d.Digest, MediaType: string(d.MediaType)}
	if d.MediaType.IsIndex() {
		idx, err := top.ImageIndex(d.Digest)
		if err != nil {
			return r, err
		}
		sub, err := idx.IndexManifest()
		if err != nil {
			return r, err
		}
		for _, m := range sub.Manifests {
			img, err := idx.Image(m.Digest)
			if err != nil {
				return r, err
			}
			ir, err := describeImage(img)
			if err != nil {
				return r, err
			}
			if m.Platform != nil && m.Platform.OS+"/"+m.Platform.Architecture != ir.Platform {
				return r, fmt.Errorf("index says %s/%s for an image of %s", m.Platform.OS, m.Platform.Architecture, ir.Platform)
			}
			r.Images = append(r.Images, ir)
		}
		return r, nil
	}
	img, err := top.Image(d.Digest)
	if err != nil {
		return r, err
	}
	ir, err := describeImage(img)
	r.Images = append(r.Images, ir)
	return r, err
}

func describeImage(img v1.Image) (ImageReport, error) {
	var ir ImageReport
	var err error
	if ir.Digest, err = img.Digest(); err != nil {
		return ir, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return ir, err
	}
	ir.Config, ir.Platform = *cf, cf.OS+"/"+cf.Architecture
	ls, err := img.Layers()
	if err != nil {
		return ir, err
	}
	for _, l := range ls {
		var lr LayerReport
		if lr.Digest, err = l.Digest(); err != nil {
			return ir, err
		}
		if lr.DiffID, err = l.DiffID(); err != nil {
			return ir, err
		}
		if lr.Size, err = l.Size(); err != nil {
			return ir, err
		}
		rc, err := l.Uncompressed()
		if err != nil {
			return ir, err
		}
		lr.Files, err = files(rc)
		rc.Close()
		if err != nil {
			return ir, err
		}
		ir.Layers = append(ir.Layers, lr)
	}
	return ir, nil
}

func files(r io.Reader) ([]File, error) {
	var fs []File
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fs, nil
		}
		if err != nil {
			return nil, err
		}
		fs = append(fs, File{Name: h.Name, Mode: h.FileInfo().Mode(), UID: h.Uid, GID: h.Gid, Size: h.Size})
	}
}

// Print writes r for a person: the digest to pin, then per platform the
// run configuration and each layer's entries.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "digest     %s (%s, ref %q)\n", r.Digest, r.MediaType, r.Ref)
	for _, ir := range r.Images {
		c := ir.Config.Config
		fmt.Fprintf(w, "%s\n  manifest   %s\n  created    %s\n  user       %s\n  entrypoint %q\n  env        %q\n",
			ir.Platform, ir.Digest, ir.Config.Created.UTC().Format("2006-01-02T15:04:05Z"), c.User, c.Entrypoint, c.Env)
		fmt.Fprintf(w, "  ports      %s\n", strings.Join(sortedKeys(c.ExposedPorts), " "))
		for _, k := range sortedKeys(c.Labels) {
			fmt.Fprintf(w, "  label      %s=%s\n", k, c.Labels[k])
		}
		for _, l := range ir.Layers {
			fmt.Fprintf(w, "  layer      %s (%d bytes; diff_id %s)\n", l.Digest, l.Size, l.DiffID)
			for _, f := range l.Files {
				fmt.Fprintf(w, "    %s\n", f)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Check says how r falls short of a release image of version and
// revision: each problem one error, nil when there is none.
func Check(r Report, version, revision string) error {
	var errs []error
	bad := func(ir ImageReport, format string, a ...any) {
		errs = append(errs, fmt.Errorf(ir.Platform+": "+format, a...))
	}
	if len(r.Images) == 0 {
		errs = append(errs, errors.New("no images"))
	}
	for _, ir := range r.Images {
		c := ir.Config.Config
		if u := strings.SplitN(c.User, ":", 2)[0]; u == "" || u == "0" || u == "root" {
			bad(ir, "runs as %q, want a non-root user", c.User)
		}
		if len(c.Entrypoint) != 1 || c.Entrypoint[0] != Entrypoint {
			bad(ir, "entrypoint %q, want [%q]", c.Entrypoint, Entrypoint)
		}
		if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
			bad(ir, "does not expose 8080/tcp")
		}
		want := map[string]string{
			"org.opencontainers.image.version":  version,
			"org.opencontainers.image.revision": revision,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.title":    "promptd",
		}
		for k, v := range want {
			if c.Labels[k] != v || v == "" {
				bad(ir, "label %s=%q, want %q", k, c.Labels[k], v)
			}
		}
		if c.Labels["org.opencontainers.image.source"] == "" {
			bad(ir, "no org.opencontainers.image.source label")
		}
		var bin *File
		for _, l := range ir.Layers {
			for i, f := range l.Files {
				if f.Name == strings.TrimPrefix(Entrypoint, "/") {
					bin = &l.Files[i]
				}
			}
		}
		switch {
		case bin == nil:
			bad(ir, "no %s in any layer", Entrypoint)
		case !bin.Mode.IsRegular() || bin.Mode.Perm() != 0o755 || bin.UID != 0 || bin.GID != 0:
			bad(ir, "%s is %s %d:%d, want a regular file -rwxr-xr-x 0:0", Entrypoint, bin.Mode, bin.UID, bin.GID)
		case bin.Size == 0:
			bad(ir, "%s is empty", Entrypoint)
		}
	}
	return errors.Join(errs...)
}
