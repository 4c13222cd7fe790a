#!/usr/bin/env bash
# A Vulkan software adapter for the WebGPU tests: Mesa 25's lavapipe (bookworm-backports),
# unpacked into a private folder (default .lavapipe/, git-ignored), not installed.
#
# Why: Dawn rejects Debian 12's lavapipe (Mesa 22: "Vulkan shaderUniform*ArrayDynamicIndexing
# required"); Mesa 25's works and offers what a real GPU does and Dawn's OpenGL path does not:
# core WebGPU, 'subgroups' (size 8), 'timestamp-query', 'shader-f16'. Installing Mesa 25 would
# also replace the system's OpenGL drivers, whose cold shader compiles are ~2.7x slower than
# Mesa 22's (the op table's eager cases: 64 s against 24 s without a shader cache), so the
# op tests stay on Mesa 22's OpenGL path and only test/webgpu-lavapipe.test.ts points Vulkan's
# loader at this folder (VK_ICD_FILENAMES). The loader itself is Debian 12's libvulkan1.
#
# Usage: bash scripts/lavapipe.sh [DIR]   (root or sudo for apt; idempotent)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=$(realpath -m "${1:-.lavapipe}")
ICD=$DIR/lvp_icd.json
[[ -f $ICD ]] && { echo "lavapipe: $ICD already there"; exit 0; }

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
SOURCES=/etc/apt/sources.list.d/kiln-bookworm-backports.sources
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' | $SUDO tee $SOURCES >/dev/null
fi
$SUDO apt-get update -qq
dpkg -s libvulkan1 >/dev/null 2>&1 || $SUDO apt-get install -y -qq --no-install-recommends libvulkan1

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# apt-get download writes to the current folder as the _apt user when it can: a world-writable one
chmod 777 "$TMP"
(cd "$TMP" && apt-get download -qq mesa-vulkan-drivers/bookworm-backports 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
DEB=$(ls "$TMP"/mesa-vulkan-drivers_*.deb)
mkdir -p "$DIR"
dpkg -x "$DEB" "$TMP/root"
cp "$TMP"/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so "$DIR/"
printf '{\n  "file_format_version": "1.0.0",\n  "ICD": { "library_path": "%s", "api_version": "1.4.305" }\n}\n' "$DIR/libvulkan_lvp.so" >"$ICD"
echo "lavapipe: $(basename "$DEB") -> $DIR (VK_ICD_FILENAMES=$ICD)"
