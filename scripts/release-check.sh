#!/usr/bin/env bash
# The release's short check, for CI: the committed HEAD builds the same
# artifacts from two clones in different directories.
#
#   ./scripts/release-check.sh
#
# Steps (the first failing one sets the exit code):
#   1. git clone HEAD twice; scripts/release.sh --targets linux/amd64 in each
#   2. the two SHA256SUMS are byte for byte equal (both printed when not)
#   3. ociimage inspect checks the image: non-root user, entrypoint, the
#      binary's path and mode, the labels naming VERSION and the commit
#   4. the built promptd --version says VERSION and the commit
#   5. go vet ./... and go test ./... in tools/release
#
# Only committed files are seen (the clones are of HEAD). The full
# four-target check is scripts/release.sh run twice (docs/releasing.md).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
commit=$(git rev-parse HEAD)
version=$(tr -d '[:space:]' <VERSION)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/promptd-release-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

for side in a b; do
	git clone -q "$repo" "$tmp/clone-$side"
	git -C "$tmp/clone-$side" checkout -q --detach "$commit"
	echo "== release.sh in $tmp/clone-$side"
	"$tmp/clone-$side/scripts/release.sh" --targets linux/amd64 --out "$tmp/dist-$side"
done

echo "== SHA256SUMS of the two clones"
if ! cmp -s "$tmp/dist-a/SHA256SUMS" "$tmp/dist-b/SHA256SUMS"; then
	echo "release-check: the two clones' artifacts differ" >&2
	echo "-- clone a:" >&2
	cat "$tmp/dist-a/SHA256SUMS" >&2
	echo "-- clone b:" >&2
	cat "$tmp/dist-b/SHA256SUMS" >&2
	exit 1
fi
echo "equal: $(sha256sum <"$tmp/dist-a/SHA256SUMS" | cut -d' ' -f1) (sha256 of SHA256SUMS)"

echo "== the image"
go -C "$tmp/clone-a/tools/release" run ./cmd/ociimage inspect -version "$version" -revision "$commit" \
	"$tmp/dist-a/promptd_${version}_oci.tar"

echo "== promptd --version"
tar -xzf "$tmp/dist-a/promptd_${version}_linux_amd64.tar.gz" -C "$tmp"
got=$("$tmp/promptd_${version}_linux_amd64/promptd" --version)
echo "$got"
case $got in
"promptd $version+${commit:0:7} "*) ;;
*) echo "release-check: promptd --version says \"$got\", want promptd $version+${commit:0:7}" >&2; exit 1 ;;
esac

echo "== tools/release: go vet, go test"
(cd "$tmp/clone-a/tools/release" && go vet ./... && go test -count=1 ./...)
echo "release-check: ok"
