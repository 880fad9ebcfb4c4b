#!/usr/bin/env bash
# Builds the release tarball: target/ishmem-rs-<version>-<arch>-linux.tar.gz,
# an installed prefix (see install.sh) with README, LICENSE and docs.
#   packaging/release.sh [install.sh options, e.g. --cuda-device-lib FILE]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
name="ishmem-rs-$version-$(uname -m)-linux"
out="${CARGO_TARGET_DIR:-$root/target}"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
packaging/install.sh --prefix "$stage/$name" "$@" >/dev/null
cp README.md LICENSE "$stage/$name/"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
