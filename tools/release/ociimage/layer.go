package ociimage

import (
	"archive/tar"
	"bytes"
	"io"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The non-root user the image runs as (distroless's "nonroot").
const (
	UID = 65532
	GID = 65532
)

// entry is one file or directory of the image's layer.
type entry struct {
	name     string // relative to /, directories end in "/"
	mode     int64
	uid, gid int
	data     []byte
}

// rootfs lists the layer's entries for one platform's binaries.
func rootfs(t Target, caCerts []byte) []entry {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	es := []entry{
		{name: "data/", mode: 0o755, uid: UID, gid: GID},
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caCerts},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: UID, gid: GID},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: "usr/local/bin/promptd", mode: 0o755, data: t.Promptd},
	}
	if t.Promptctl != nil {
		es = append(es, entry{name: "usr/local/bin/promptctl", mode: 0o755, data: t.Promptctl})
	}
	return es
}

// layerTar writes entries as a tar with names sorted and every mtime
// created, so equal entries give equal bytes.
func layerTar(es []entry, created time.Time) ([]byte, error) {
	es = append([]entry(nil), es...)
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: created,
			Format:  tar.FormatUSTAR,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layer is entries as a gzip-compressed OCI layer.
func layer(es []entry, created time.Time) (v1.Layer, error) {
	b, err := layerTar(es, created)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}
