package ociimage

import (
	"encoding/pem"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Roots is the NSS (Mozilla) root store of the x509roots/fallback module
// that go.mod pins, as a PEM bundle: the same bytes on every build host,
// unlike the host's /etc/ssl/certs, so the image digest does not depend on
// which ca-certificates package the builder has. Roots that carry a
// constraint PEM cannot express (a distrust-after date) are left out.
func Roots() []byte {
	var out []byte
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})...)
	}
	return out
}
