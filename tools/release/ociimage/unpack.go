package ociimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Unpack writes the root filesystem of the layout's image for platform
// (os/arch) into dir, with the layer's modes and, when run as root, its
// owners: a root to chroot into and run the image's binary as its user.
func Unpack(p layout.Path, platform, dir string) error {
	img, err := platformImage(p, platform)
	if err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("layer entry %q leaves the root", h.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		mode := h.FileInfo().Mode()
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			err = writeFile(dst, tr)
		default:
			err = fmt.Errorf("layer entry %q is not a file or directory", h.Name)
		}
		if err != nil {
			return err
		}
		if err := os.Chmod(dst, mode&(os.ModePerm|os.ModeSticky)); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(dst, h.Uid, h.Gid); err != nil {
				return err
			}
		}
	}
}

// platformImage is the layout's image for os/arch: the only image, or
// the index's entry for it.
func platformImage(p layout.Path, platform string) (v1.Image, error) {
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 {
		return nil, fmt.Errorf("index.json names %d manifests, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.MediaType.IsIndex() {
		idx, err := top.ImageIndex(d.Digest)
		if err != nil {
			return nil, err
		}
		sub, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, m := range sub.Manifests {
			if m.Platform != nil && m.Platform.OS+"/"+m.Platform.Architecture == platform {
				return idx.Image(m.Digest)
			}
		}
		return nil, fmt.Errorf("no image for %s in the index", platform)
	}
	img, err := top.Image(d.Digest)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if got := cf.OS + "/" + cf.Architecture; got != platform {
		return nil, fmt.Errorf("the image is for %s, not %s", got, platform)
	}
	return img, nil
}
