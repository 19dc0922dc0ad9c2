#!/usr/bin/env bash
# Builds promptd's release artifacts from the commit checked out, byte for
# byte the same from any clone of that commit (see docs/releasing.md).
#
#   ./scripts/release.sh [--out DIR] [--targets "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"] [--allow-dirty]
#
# Into DIR (default dist/, which must be empty or absent):
#   promptd_<version>_<os>_<arch>.tar.gz     promptd, promptctl, LICENSE, README
#   promptd_<version>_<os>_<arch>.cdx.json   CycloneDX SBOM of promptd's Go modules for that target
#   promptd-client_<version>.cdx.json        CycloneDX SBOM of sdk/typescript (npm)
#   promptd_<version>_oci.tar                the image, an OCI image layout (linux targets only)
#   promptd_<version>_oci.digest             its digest, to pin it by
#   SHA256SUMS                               of all of the above
#
# What makes two builds equal: CGO_ENABLED=0, -trimpath (no clone or module
# cache path), -buildvcs=false with the version and commit linked in
# (-X main.version=<VERSION>+<commit>), -buildid=, GOFLAGS and the GOAMD64 /
# GOARM64 levels set here rather than taken from the environment, and every
# timestamp in the archives and the image the commit's time
# (SOURCE_DATE_EPOCH). The same Go toolchain is needed: its version is in each
# tarball's README. Needs go, git, GNU tar, gzip, npm, and the module proxy
# and npm registry the first time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

out=dist
targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
allow_dirty=0
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--targets) targets=$2; shift 2 ;;
	--allow-dirty) allow_dirty=1; shift ;;
	-h | --help) sed -n '2,22p' "$0"; exit 0 ;;
	*) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

die() { echo "release.sh: $*" >&2; exit 1; }

version=$(tr -d '[:space:]' <VERSION)
[ -n "$version" ] || die "VERSION is empty"
commit=$(git rev-parse HEAD)
linked="$version+${commit:0:7}"
if [ -n "$(git status --porcelain)" ]; then
	[ "$allow_dirty" = 1 ] || die "the work tree has uncommitted or untracked files (git status): a release is built from a commit; --allow-dirty builds anyway, marked .dirty"
	linked="$linked.dirty"
fi
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH TZ=UTC LC_ALL=C

mkdir -p "$out"
[ -z "$(ls -A "$out")" ] || die "$out is not empty: remove it first (rm -rf $out)"
out=$(cd "$out" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/promptd-release.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The Go environment of the build, not the caller's.
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOEXPERIMENT=
unset GOAMD64 GOARM64 GO386 GOARM GOOS GOARCH
goversion=$(go env GOVERSION)
ldflags="-s -w -buildid= -X main.version=$linked"

# Host tools: cyclonedx-gomod and ociimage, built for this machine.
GOBIN=$work/bin go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
go -C tools/release build -trimpath -o "$work/bin/ociimage" ./cmd/ociimage

echo "release.sh: promptd $linked at $commit (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH, $goversion) into $out"
image_args=()
for t in $targets; do
	goos=${t%/*} goarch=${t#*/}
	[ "$goos/$goarch" = "$t" ] && [ -n "$goos" ] && [ -n "$goarch" ] || die "target $t: want os/arch"
	name=promptd_${version}_${goos}_${goarch}
	stage=$work/$name
	mkdir -p "$stage"
	level=()
	case $goarch in
	amd64) level=(GOAMD64=v1) ;;
	arm64) level=(GOARM64=v8.0) ;;
	esac
	for cmd in promptd promptctl; do
		env GOOS="$goos" GOARCH="$goarch" "${level[@]}" \
			go build -trimpath -ldflags="$ldflags" -o "$stage/$cmd" "./cmd/$cmd"
	done
	cp LICENSE "$stage/LICENSE"
	cat >"$stage/README" <<EOF
promptd $version ($goos/$goarch)

A prompt-config and session-coordination service for fleets of AI agents.

  promptd     the server; promptd --help lists its configuration (PROMPTD_*)
  promptctl   the command-line client

Commit:    $commit
Built by:  $goversion, CGO_ENABLED=0, reproducibly (scripts/release.sh)
License:   Apache-2.0 (LICENSE)
Source:    https://github.com/promptd/promptd
EOF
	chmod 0755 "$stage" "$stage/promptd" "$stage/promptctl"
	chmod 0644 "$stage/LICENSE" "$stage/README"
	tar -C "$work" --sort=name --format=ustar --mtime="@$SOURCE_DATE_EPOCH" \
		--owner=0 --group=0 --numeric-owner -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"

	env GOOS="$goos" GOARCH="$goarch" "${level[@]}" "$work/bin/cyclonedx-gomod" app -json -licenses \
		-noserial -notimestamp -main cmd/promptd -output "$out/$name.cdx.json" "$root" 2>"$work/cdx.log" ||
		{ cat "$work/cdx.log" >&2; die "cyclonedx-gomod for $t failed"; }

	if [ "$goos" = linux ]; then
		image_args+=(-promptd "$t=$stage/promptd" -promptctl "$t=$stage/promptctl")
	fi
	echo "  $name.tar.gz"
done

# The TypeScript SDK's SBOM, from a copy of its manifest and lockfile so the
# work tree's node_modules are left as they are, laid out as the repository
# is: its tests' launcher, integrations/testkit, is a file: devDependency.
mkdir -p "$work/npm/sdk/typescript" "$work/npm/integrations/testkit"
cp sdk/typescript/package.json sdk/typescript/package-lock.json "$work/npm/sdk/typescript/"
cp integrations/testkit/package.json "$work/npm/integrations/testkit/"
(
	cd "$work/npm/sdk/typescript"
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
	npm exec --yes --package=@cyclonedx/cyclonedx-npm@6.0.1 -- cyclonedx-npm \
		--output-reproducible --output-format JSON --output-file "$out/promptd-client_${version}.cdx.json" 2>"$work/npm.log"
) || { cat "$work/npm.log" >&2 2>/dev/null || true; die "cyclonedx-npm for sdk/typescript failed"; }
echo "  promptd-client_${version}.cdx.json"

if [ ${#image_args[@]} -gt 0 ]; then
	"$work/bin/ociimage" build -out "$out/promptd_${version}_oci.tar" -version "$version" \
		-revision "$commit" -created "$SOURCE_DATE_EPOCH" "${image_args[@]}" | tee "$work/image.txt" | sed 's/^/  /'
	cut -d' ' -f1 "$work/image.txt" >"$out/promptd_${version}_oci.digest"
fi

(cd "$out" && sha256sum -- $(ls | grep -v '^SHA256SUMS$') >SHA256SUMS)
echo "release.sh: $out/SHA256SUMS"
cat "$out/SHA256SUMS"
