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
#   5. the image's linux/amd64 root filesystem, unpacked and entered with
#      chroot as the image's user 65532, serves /readyz (as root only:
#      skipped, saying so, otherwise)
#   6. go vet ./... and go test ./... in tools/release
#
# Only committed files are seen (the clones are of HEAD). The full
# four-target check is scripts/release.sh run twice (docs/releasing.md).
#
#   RELEASE_CHECK_KEEP=DIR   copy the first clone's artifacts into DIR
#                            (scripts/test.sh hands them to package-test.sh)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
commit=$(git rev-parse HEAD)
version=$(tr -d '[:space:]' <VERSION)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/promptd-release-check.XXXXXX")
server=""
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$tmp"' EXIT

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
if [ -n "${RELEASE_CHECK_KEEP:-}" ]; then
	mkdir -p "$RELEASE_CHECK_KEEP"
	cp -p "$tmp/dist-a/"* "$RELEASE_CHECK_KEEP/"
	echo "kept the artifacts in $RELEASE_CHECK_KEEP"
fi

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

echo "== the image's root filesystem, run as 65532:65532"
if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null; then
	rootfs=$tmp/rootfs
	chroot=$(command -v chroot)
	go -C "$tmp/clone-a/tools/release" run ./cmd/ociimage unpack -platform linux/amd64 \
		"$tmp/dist-a/promptd_${version}_oci.tar" "$rootfs"
	port=$((20000 + RANDOM % 30000))
	# The image's environment, with a free loopback port for its 0.0.0.0:8080.
	env -i PATH=/usr/local/bin PROMPTD_DATA_DIR=/data PROMPTD_ADDR="127.0.0.1:$port" \
		"$chroot" --userspec=65532:65532 "$rootfs" /usr/local/bin/promptd >"$tmp/serve.log" 2>&1 &
	server=$!
	ready=""
	for _ in $(seq 100); do
		if "$chroot" --userspec=65532:65532 "$rootfs" /usr/local/bin/promptd healthcheck --ready \
			--url "http://127.0.0.1:$port" >"$tmp/probe.log" 2>&1; then
			ready=1
			break
		fi
		sleep 0.2
	done
	kill "$server" && wait "$server" || true
	server=""
	if [ -z "$ready" ]; then
		cat "$tmp/probe.log" "$tmp/serve.log" >&2
		echo "release-check: promptd in the image's root filesystem did not become ready" >&2
		exit 1
	fi
	echo "ready: $(cat "$tmp/probe.log"); /data holds $(cd "$rootfs/data" && stat -c '%n(%u)' * | tr '\n' ' ')"
else
	echo "skipped: needs root and chroot"
fi

echo "== tools/release: go vet, go test"
(cd "$tmp/clone-a/tools/release" && go vet ./... && go test -count=1 ./...)
echo "release-check: ok"
