package ociimage

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// RefName is the annotation naming the image in an image layout's index
// (skopeo's oci-archive:FILE:NAME).
const RefName = "org.opencontainers.image.ref.name"

// WriteArchive writes top (an image or an index) as an OCI image-layout
// tarball: oci-layout, index.json naming top as ref, and every blob,
// sorted, dated mtime. Equal images give equal bytes.
func WriteArchive(w io.Writer, top partial.Describable, ref string, mtime time.Time) error {
	blobs := map[string][]byte{}
	desc, err := collect(top, blobs)
	if err != nil {
		return err
	}
	if img, ok := top.(v1.Image); ok {
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		desc.Platform = cf.Platform()
	}
	desc.ArtifactType = "" // as in Build's index (plainImage)
	desc.Annotations = map[string]string{RefName: ref}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests:     []v1.Descriptor{*desc},
	})
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`),
		"index.json": index,
	}
	for hex, b := range blobs {
		files["blobs/sha256/"+hex] = b
	}
	names := []string{"blobs/", "blobs/sha256/"}
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		h := &tar.Header{Name: n, ModTime: mtime, Format: tar.FormatUSTAR}
		if strings.HasSuffix(n, "/") {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		} else {
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(files[n]))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// collect adds d's manifest and everything it refers to into blobs (by hex
// digest) and returns d's descriptor.
func collect(d partial.Describable, blobs map[string][]byte) (*v1.Descriptor, error) {
	switch x := d.(type) {
	case v1.ImageIndex:
		raw, err := x.RawManifest()
		if err != nil {
			return nil, err
		}
		im, err := x.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, m := range im.Manifests {
			img, err := x.Image(m.Digest)
			if err != nil {
				return nil, err
			}
			if _, err := collect(img, blobs); err != nil {
				return nil, err
			}
		}
		return put(blobs, x, raw)
	case v1.Image:
		raw, err := x.RawManifest()
		if err != nil {
			return nil, err
		}
		cfg, err := x.RawConfigFile()
		if err != nil {
			return nil, err
		}
		cn, err := x.ConfigName()
		if err != nil {
			return nil, err
		}
		blobs[cn.Hex] = cfg
		ls, err := x.Layers()
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			dg, err := l.Digest()
			if err != nil {
				return nil, err
			}
			rc, err := l.Compressed()
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
			blobs[dg.Hex] = b
		}
		return put(blobs, x, raw)
	}
	return nil, fmt.Errorf("%T is neither an image nor an index", d)
}

func put(blobs map[string][]byte, d partial.Describable, raw []byte) (*v1.Descriptor, error) {
	desc, err := partial.Descriptor(d)
	if err != nil {
		return nil, err
	}
	blobs[desc.Digest.Hex] = raw
	return desc, nil
}

// ReadArchive unpacks an OCI image-layout tarball into dir (which it
// creates) and opens it.
func ReadArchive(file, dir string) (layout.Path, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
		name := path.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return "", fmt.Errorf("%s: entry %q leaves the layout", file, h.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = writeFile(p, tr)
		default:
			err = fmt.Errorf("%s: entry %q is not a file or directory", file, h.Name)
		}
		if err != nil {
			return "", err
		}
	}
	return layout.FromPath(dir)
}

func writeFile(p string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
