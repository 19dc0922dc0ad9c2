// Command ociimage builds promptd's release image as an OCI image-layout
// tarball, with no Docker daemon, and inspects one.
//
//	ociimage build -out promptd_0.1.0_oci.tar -version 0.1.0 -revision SHA \
//	    -created SOURCE_DATE_EPOCH [-ca BUNDLE.pem] \
//	    -promptd linux/amd64=dist/linux_amd64/promptd [-promptctl linux/amd64=...] ...
//	ociimage inspect [-version 0.1.0 -revision SHA] promptd_0.1.0_oci.tar
//	ociimage unpack [-platform linux/amd64] promptd_0.1.0_oci.tar DIR
//
// build prints the digest to pin. inspect prints the digest, each
// platform's user, entrypoint, labels and layer entries, and with -version
// exits 1 when the image is not a release image of that version. unpack
// writes a platform's root filesystem into DIR (owners kept when run as
// root), to chroot into.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/promptd/promptd/tools/release/ociimage"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: ociimage build|inspect|unpack ...")
	}
	switch args[0] {
	case "build":
		return build(args[1:], stdout)
	case "inspect":
		return inspect(args[1:], stdout)
	case "unpack":
		return unpack(args[1:])
	}
	return fmt.Errorf("unknown command %q: build, inspect or unpack", args[0])
}

// platformFiles is a repeatable -flag os/arch=path.
type platformFiles map[string]string

func (p platformFiles) String() string { return fmt.Sprint(map[string]string(p)) }
func (p platformFiles) Set(v string) error {
	plat, file, ok := strings.Cut(v, "=")
	if !ok || !strings.Contains(plat, "/") {
		return fmt.Errorf("%q: want os/arch=path", v)
	}
	p[plat] = file
	return nil
}

func build(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	out := fs.String("out", "", "the OCI image-layout tarball to write")
	version := fs.String("version", "", "the release version (the VERSION file's)")
	revision := fs.String("revision", "", "the full commit hash")
	source := fs.String("source", "https://github.com/promptd/promptd", "the repository's URL")
	created := fs.Int64("created", -1, "SOURCE_DATE_EPOCH: seconds since 1970 for every timestamp")
	ca := fs.String("ca", "", "a PEM CA bundle to install (default: the NSS roots go.mod pins, the same on every host)")
	promptd, promptctl := platformFiles{}, platformFiles{}
	fs.Var(promptd, "promptd", "os/arch=path of a static linux promptd (repeat per platform)")
	fs.Var(promptctl, "promptctl", "os/arch=path of promptctl for that platform (optional)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *created < 0 || len(promptd) == 0 {
		return errors.New("build needs -out, -created and at least one -promptd")
	}
	s := ociimage.Spec{Version: *version, Revision: *revision, Source: *source, Created: time.Unix(*created, 0).UTC()}
	var err error
	s.CACerts = ociimage.Roots()
	if *ca != "" {
		if s.CACerts, err = os.ReadFile(*ca); err != nil {
			return err
		}
	}
	plats := make([]string, 0, len(promptd))
	for p := range promptd {
		plats = append(plats, p)
	}
	sort.Strings(plats)
	for _, p := range plats {
		goos, arch, _ := strings.Cut(p, "/")
		t := ociimage.Target{OS: goos, Arch: arch}
		if t.Promptd, err = os.ReadFile(promptd[p]); err != nil {
			return err
		}
		if f, ok := promptctl[p]; ok {
			if t.Promptctl, err = os.ReadFile(f); err != nil {
				return err
			}
		}
		s.Targets = append(s.Targets, t)
	}
	for p := range promptctl {
		if _, ok := promptd[p]; !ok {
			return fmt.Errorf("-promptctl %s without a -promptd for it", p)
		}
	}
	img, err := ociimage.Build(s)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := ociimage.WriteArchive(&buf, img, s.Version, s.Created); err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s (%s)\n", d, *out, strings.Join(plats, " "))
	return nil
}

func inspect(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	version := fs.String("version", "", "check the image is a release image of this version")
	revision := fs.String("revision", "", "and of this commit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("inspect takes one tarball")
	}
	p, done, err := readArchive(fs.Arg(0))
	if err != nil {
		return err
	}
	defer done()
	r, err := ociimage.Describe(p)
	if err != nil {
		return err
	}
	r.Print(stdout)
	if *version == "" {
		return nil
	}
	if err := ociimage.Check(r, *version, *revision); err != nil {
		return fmt.Errorf("not a release image of %s:\n%w", *version, err)
	}
	fmt.Fprintln(stdout, "ok: release image of "+*version+" "+*revision+" ("+strconv.Itoa(len(r.Images))+" platforms)")
	return nil
}

func unpack(args []string) error {
	fs := flag.NewFlagSet("unpack", flag.ContinueOnError)
	platform := fs.String("platform", "linux/amd64", "the image of this os/arch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("unpack takes a tarball and a directory")
	}
	p, done, err := readArchive(fs.Arg(0))
	if err != nil {
		return err
	}
	defer done()
	return ociimage.Unpack(p, *platform, fs.Arg(1))
}

// readArchive opens an image tarball in a temporary directory that done
// removes.
func readArchive(tarball string) (layout.Path, func(), error) {
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return "", nil, err
	}
	p, err := ociimage.ReadArchive(tarball, dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return p, func() { os.RemoveAll(dir) }, nil
}
