#!/usr/bin/env bash
# Prepares issue 10's GPU checks for ONE call of the device tool (a lent NVIDIA H200, Node not
# installed there): run here, on an x86-64 machine with node, npm install done, and network.
#
#   scripts/gpu-device-prepare.sh            build .device/ and .gl/, print what travels
#   scripts/gpu-device-prepare.sh --check    only say whether .device/ matches the sources
#
# .device/ (ignored through .git/info/exclude; the call names it in carry):
#   node.xz                       this machine's node binary, xz-compressed (cached by sha256)
#   node_modules/webgpu/          index.js + package.json + dist/linux-x64/dawn.node.xz (unpacked
#                                 there by gpu-device-run.sh)
#   node_modules/koffi/, node_modules/@koromix/koffi-linux-x64/   the FFI kiln/node loads lazily
#   bench/, test/, scripts/, chunks/   kiln bundled by scripts/gpu-device-bundle.mjs (esbuild):
#                                 bench/gpu.mjs, bench/webgpu-overhead.mjs, test/webgpu*.test.mjs
#                                 (not webgpu-browser), scripts/gpu-device-adapter.mjs
#   inputs.sha256                 the sources bundled (the run script warns if they changed)
#   torch_bench.py                a copy of bench/gpu/torch_bench.py (the run uses the tree's own)
# .gl/: the Vulkan/GL loader .debs (amd64) that /work/.library/device/README.md says to bring.
# Then: the device tool's run with carry [".device", ".gl"], command
# `bash scripts/gpu-device-run.sh`, timeout_s 600 (see src/backend/webgpu/README.md).

set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
D=.device
LIMIT_MIB=${KILN_DEVICE_LIMIT_MIB:-60}

if [[ ${1:-} == --check ]]; then
  [[ -f $D/inputs.sha256 ]] || { echo "no $D/inputs.sha256: run scripts/gpu-device-prepare.sh"; exit 1; }
  if sha256sum --quiet -c $D/inputs.sha256 >/dev/null 2>&1; then echo "$D matches the sources"; exit 0; fi
  echo "$D is stale (sources changed since it was built): run scripts/gpu-device-prepare.sh"; exit 1
fi

[[ $(uname -m) == x86_64 ]] || { echo "the device is x86-64: run this on an x86-64 machine (uname -m: $(uname -m))" >&2; exit 1; }
NODE=$(command -v node) || { echo "node not found" >&2; exit 1; }
NODE=$(readlink -f "$NODE")
[[ -d node_modules/esbuild && -d node_modules/webgpu/dist/linux-x64 ]] || { echo "node_modules incomplete: run npm install" >&2; exit 1; }

# 1. ignore what is built here (it travels through carry, not as untracked files)
mkdir -p .git/info
touch .git/info/exclude
for p in /.device/ /.gl/; do grep -qxF "$p" .git/info/exclude || echo "$p" >>.git/info/exclude; done

mkdir -p $D
t0=$SECONDS

# 2. kiln bundled (clears and rewrites $D/{bench,test,scripts,chunks} and $D/inputs.sha256)
node scripts/gpu-device-bundle.mjs $D
cp bench/gpu/torch_bench.py $D/torch_bench.py

# 3. node, xz-compressed, reused while the binary is the same
xz_cached() { # src dst.xz: compress unless dst.xz was made from the same bytes
  local sum; sum=$(sha256sum "$1" | cut -d' ' -f1)
  if [[ -f $2 && -f $2.src-sha256 && $(cat "$2.src-sha256") == "$sum" ]]; then echo "cached: $2"; return; fi
  echo "xz -9: $1 -> $2 ($(du -h "$1" | cut -f1), a minute or two for node)"
  xz -T0 -9 -c "$1" >"$2.tmp" && mv "$2.tmp" "$2" && echo "$sum" >"$2.src-sha256"
}
xz_cached "$NODE" $D/node.xz
"$NODE" --version >$D/node.version

# 4. the trimmed node_modules: only what the bundles import at run time (webgpu) and what
#    kiln/node requires lazily (koffi with its linux-x64 prebuilt)
NM=$D/node_modules
keep_dawn=""
if [[ -f $NM/webgpu/dist/linux-x64/dawn.node.xz ]]; then keep_dawn=$(mktemp -d); mv $NM/webgpu/dist/linux-x64/dawn.node.xz* "$keep_dawn"/; fi
rm -rf $NM
mkdir -p $NM/webgpu/dist/linux-x64 $NM/koffi/src/koffi/src $NM/@koromix/koffi-linux-x64
cp node_modules/webgpu/{package.json,index.js,LICENSE.md} $NM/webgpu/
[[ -n $keep_dawn ]] && mv "$keep_dawn"/* $NM/webgpu/dist/linux-x64/ && rmdir "$keep_dawn"
xz_cached node_modules/webgpu/dist/linux-x64/dawn.node $NM/webgpu/dist/linux-x64/dawn.node.xz
cp node_modules/koffi/{package.json,index.js,index.cjs,indirect.js,indirect.cjs,LICENSE.txt} $NM/koffi/
cp node_modules/koffi/src/koffi/{index.js,index.cjs,indirect.js,indirect.cjs} $NM/koffi/src/koffi/
cp node_modules/koffi/src/koffi/src/*.{js,cjs} $NM/koffi/src/koffi/src/
cp -r node_modules/@koromix/koffi-linux-x64/{package.json,index.js,linux_x64} $NM/@koromix/koffi-linux-x64/
# check: the copy loads (koffi here; webgpu's index.js needs the unpacked dawn.node, checked by the run)
node -e "if (typeof require('module').createRequire('$ROOT/$D/bench/x.mjs')('koffi').load !== 'function') process.exit(1)" \
  || { echo "the trimmed koffi does not load" >&2; exit 1; }

# 5. the Vulkan/GL loaders for the device (device README), once
DEBS="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
missing=""
for p in $DEBS; do compgen -G ".gl/${p}_*_amd64.deb" >/dev/null || missing+=" $p"; done
if [[ -n $missing ]]; then
  echo "downloading loader .debs:$missing"
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update >/dev/null
  (cd .gl && apt-get $o download $missing)
fi
for p in $DEBS; do compgen -G ".gl/${p}_*_amd64.deb" >/dev/null || { echo ".gl/ lacks $p" >&2; exit 1; }; done

# 6. what travels: tracked + untracked-not-ignored files (and shared/), plus the carried folders
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s+=$1} END {print s+0}')
tracked_bytes=$(git ls-files -z | xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s+=$1} END {print s+0}')
shared_bytes=0; [[ -d shared ]] && shared_bytes=$(du -sb shared | cut -f1)
dev_bytes=$(du -sb $D | cut -f1)
gl_bytes=$(du -sb .gl | cut -f1)
total=$((tree_bytes + shared_bytes + dev_bytes + gl_bytes))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo
echo "node $(cat $D/node.version) -> $D/node.xz $(mib "$(stat -c %s $D/node.xz)")"
echo "node_modules $(mib "$(du -sb $NM | cut -f1)"), bundles $(mib "$(du -scb $D/bench $D/test $D/scripts $D/chunks | tail -1 | cut -f1)")"
echo "travels: tree $(mib "$tree_bytes") (tracked $(mib "$tracked_bytes")) + shared $(mib "$shared_bytes") + .device $(mib "$dev_bytes") + .gl $(mib "$gl_bytes") = $(mib "$total") (limit here ${LIMIT_MIB} MiB; the tool's is 64) [$((SECONDS - t0)) s]"
if ((total > LIMIT_MIB * 1048576)); then
  echo "too large: over ${LIMIT_MIB} MiB" >&2
  exit 1
fi
echo "ready: device run with carry [\".device\", \".gl\"], command 'bash scripts/gpu-device-run.sh', timeout_s 600"
