// Package ociimage builds promptd's container image without a Docker
// daemon and reads it back.
//
// The image has an empty base and one layer: the static binaries under
// /usr/local/bin, CA certificates, an /etc/passwd naming the non-root user
// 65532 it runs as, and a /data directory that user owns. Every timestamp
// in it is the release's SOURCE_DATE_EPOCH and every list is sorted, so the
// same inputs give the same digest. Build makes an image per platform (an
// index over them when there are several); WriteArchive writes the result
// as an OCI image-layout tarball; ReadArchive and Describe read one back
// and Check says what a release image must be and is not.
package ociimage
