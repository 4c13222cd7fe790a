#!/usr/bin/env bash
# A local rehearsal of the device call (issue 10), at no device time: copies what the device
# tool would send (tracked and untracked-not-ignored files, plus .device/ and .gl/) into a
# scratch folder, and runs scripts/gpu-device-run.sh there with KILN_DEVICE_LOCAL=1 (no dpkg,
# no ldconfig), node only from .device/node.xz, no node_modules but .device's, a fake $OUT, and
# smoke sizes on whatever adapter Dawn finds here (llvmpipe: slow; a few minutes).
#
#   scripts/gpu-device-rehearse.sh [scratch=/tmp/kiln-device-rehearsal]
#
# Overrides: the run script's variables (KILN_DEVICE_STEPS, KILN_GPU_ARGS, ...); the defaults
# here are smoke-sized. KILN_PYTHON defaults to /usr/bin/python3 (the pyenv python3 first on
# PATH here has no torch).

set -euo pipefail
cd "$(dirname "$0")/.."
S=${1:-/tmp/kiln-device-rehearsal}
[[ -d .device ]] || { echo "run scripts/gpu-device-prepare.sh first" >&2; exit 1; }
scripts/gpu-device-prepare.sh --check
rm -rf "$S" /tmp/kiln-node
mkdir -p "$S/out"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done \
  | xargs -0 cp --parents -t "$S"
cp -r .device .gl "$S"/
[[ -d shared ]] && cp -r shared "$S"/
echo "scratch copy: $(du -sh "$S" | cut -f1) in $S"
cd "$S"
# PATH without node_modules/.bin, and a `node` first on it that fails: the run must use the
# node it unpacks (it puts /tmp/kiln-node first)
mkdir -p /tmp/kiln-rehearsal-bin
printf '#!/bin/sh\necho "rehearsal: the system node was called ($*)" >&2\nexit 99\n' >/tmp/kiln-rehearsal-bin/node
chmod +x /tmp/kiln-rehearsal-bin/node
P=/tmp/kiln-rehearsal-bin:$(tr ':' '\n' <<<"$PATH" | grep -v node_modules | paste -sd:)
env PATH="$P" OUT="$S/out" KILN_DEVICE_LOCAL=1 \
  KILN_PYTHON="${KILN_PYTHON:-/usr/bin/python3}" \
  KILN_GPU_ARGS="${KILN_GPU_ARGS:---smoke --only W1,W4}" \
  KILN_TORCH_ARGS="${KILN_TORCH_ARGS:---size cpu --quick --smoke}" \
  KILN_TORCH_GROUPS="${KILN_TORCH_GROUPS:-W1,W4 W7}" \
  KILN_DEVICE_TOTAL="${KILN_DEVICE_TOTAL:-1500}" KILN_T_TESTS="${KILN_T_TESTS:-900}" KILN_T_KILN="${KILN_T_KILN:-300}" \
  KILN_T_TORCH="${KILN_T_TORCH:-300}" KILN_T_OVERHEAD="${KILN_T_OVERHEAD:-200}" \
  bash scripts/gpu-device-run.sh && rc=0 || rc=$?
echo "rehearsal rc=$rc; files back (at most 8): $(ls "$S/out" | wc -l): $(ls "$S/out" | tr '\n' ' ')"
exit $rc
