#!/usr/bin/env bash
# Issue 10's GPU checks in one device call. Runs ON the lent GPU machine, from the repository
# root, over the tree plus the carried .device/ and .gl/ made by scripts/gpu-device-prepare.sh:
#
#   device run: carry [".device", ".gl"], command "bash scripts/gpu-device-run.sh", timeout_s 600
#
# Setup (~15 s): the loader .debs unpacked into / and ldconfig (as root; skipped with
# KILN_DEVICE_LOCAL=1), the NVIDIA Vulkan/EGL driver files exported when no ICD is found, node
# unpacked to /tmp/kiln-node, dawn.node unpacked in place, nvidia-smi, the adapter kiln gets.
# Then each step under its own timeout, all inside KILN_DEVICE_TOTAL seconds (default 555, so
# the command ends inside the tool's 600), results written as they come:
#   tests     node --test on .device/test/*.test.mjs             -> $OUT/tests.log
#   kiln      bench/gpu kiln side, GPU sizes, --no-torch         -> $OUT/gpu-kiln.json (after each workload)
#   torch     torch_bench.py --size gpu, one process per group   -> $OUT/gpu-torch.json (after each group)
#   overhead  bench/webgpu-overhead                              -> $OUT/webgpu-overhead.txt
# and $OUT/gpu.json: gpu-kiln.json with its `torch` field set to gpu-torch.json (what
# `bench/gpu.ts --out` writes when both sides run in one process), $OUT/run.log: everything.
#
# Environment (all optional):
#   KILN_DEVICE_STEPS   steps to run, in order (default "tests kiln torch overhead")
#   KILN_DEVICE_TOTAL   seconds for the whole script (default 555)
#   KILN_T_TESTS, KILN_T_KILN, KILN_T_TORCH, KILN_T_OVERHEAD   per-step caps (120 200 150 45)
#   KILN_GPU_ARGS       bench/gpu arguments besides --no-torch --out (default "--size gpu";
#                       e.g. "--size gpu --only W3,W4 --max-autotune", or "--smoke --only W1")
#   KILN_TORCH_ARGS     torch_bench.py arguments (default "--size gpu --iters 20 --warmup 3")
#   KILN_TORCH_GROUPS   workloads per torch process, space-separated (default "W1,W3,W4 W2,W6 W7")
#   KILN_PYTHON         the python with torch (default python3)
#   KILN_TEST_CONCURRENCY   node --test concurrency (default 2)
#   KILN_DEVICE_LOCAL=1 a local rehearsal: no dpkg/ldconfig, no driver exports

set -uo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
D=.device
OUT=${OUT:-/tmp/kiln-device-out}
mkdir -p "$OUT"
LOCAL=${KILN_DEVICE_LOCAL:-0}
TOTAL=${KILN_DEVICE_TOTAL:-555}
PY=${KILN_PYTHON:-python3}
STEPS=${KILN_DEVICE_STEPS:-tests kiln torch overhead}
exec > >(tee -a "$OUT/run.log") 2>&1
TEE_PID=$!

say() { printf '\n== [%3ds] %s\n' $((SECONDS - START)) "$*"; }
left() { echo $((TOTAL - (SECONDS - START))); }
cap() { # seconds for a step: its cap, or what is left of TOTAL if less (at least 5)
  local l; l=$(left); ((l < $1)) && set -- "$l"; (($1 < 5)) && set -- 5; echo "$1"
}
unxz_to() { # file.xz dest: xz, else python's lzma
  if command -v xz >/dev/null; then xz -dc "$1" >"$2"; else "$PY" -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; fi
}
SUMMARY=()
FAILED=0
step_done() { SUMMARY+=("$(printf '%-9s rc=%-3s %4ds%s' "$1" "$2" "$3" "${4:+  $4}")"); [[ $2 == 0 ]] || FAILED=1; }

[[ -f $D/node.xz && -f $D/inputs.sha256 ]] || { echo "no $D/: run scripts/gpu-device-prepare.sh here first, and carry .device"; exit 2; }

# ---------------------------------------------------------------- setup
say "setup ($(uname -m), $(id -un), OUT=$OUT, steps: $STEPS, total ${TOTAL}s)"
if [[ $LOCAL != 1 ]]; then
  if [[ $(id -u) == 0 ]]; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  else
    echo "not root: loader .debs not unpacked"
  fi
  ldconfig -p | grep -E 'libvulkan|libEGL\.so' | head -4
fi
NV_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
NV_EGL=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
driver_exports() {
  [[ -f $NV_ICD ]] || return 1
  [[ ${VK_DRIVER_FILES:-} == "$NV_ICD" ]] && return 1
  export VK_DRIVER_FILES=$NV_ICD __EGL_VENDOR_LIBRARY_FILENAMES=$NV_EGL
  echo "exported VK_DRIVER_FILES=$VK_DRIVER_FILES __EGL_VENDOR_LIBRARY_FILENAMES=$__EGL_VENDOR_LIBRARY_FILENAMES"
}
if [[ $LOCAL != 1 && -z ${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-} ]]; then
  icds=$(ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json 2>/dev/null | grep -i nvidia)
  if [[ -n $icds ]]; then echo "Vulkan ICD: $icds"; else echo "no NVIDIA Vulkan ICD in the standard folders"; driver_exports || echo "and no $NV_ICD"; fi
fi

NODE_DIR=/tmp/kiln-node
mkdir -p $NODE_DIR
if [[ ! -x $NODE_DIR/node ]] || ! $NODE_DIR/node --version >/dev/null 2>&1; then
  unxz_to $D/node.xz $NODE_DIR/node.tmp && chmod +x $NODE_DIR/node.tmp && mv $NODE_DIR/node.tmp $NODE_DIR/node
fi
export PATH=$NODE_DIR:$PATH
DAWN=$D/node_modules/webgpu/dist/linux-x64/dawn.node
[[ -f $DAWN ]] || { unxz_to $DAWN.xz $DAWN.tmp && mv $DAWN.tmp $DAWN; }
echo "node $(node --version) ($(command -v node)); $PY: $("$PY" --version 2>&1)"
NODE_RUN=(node --enable-source-maps)
if ! sha256sum --quiet -c $D/inputs.sha256 >/dev/null 2>&1; then
  echo "WARNING: sources differ from what .device was bundled from (rerun scripts/gpu-device-prepare.sh before the call):"
  sha256sum --quiet -c $D/inputs.sha256 2>&1 | head -5
fi

say "nvidia-smi"
if command -v nvidia-smi >/dev/null; then timeout 20 nvidia-smi; else echo "no nvidia-smi"; fi

say "WebGPU adapter"
timeout 60 "${NODE_RUN[@]}" $D/scripts/gpu-device-adapter.mjs | tee /tmp/kiln-adapter.txt
arc=${PIPESTATUS[0]}
nvidia_vk() { grep -qi nvidia /tmp/kiln-adapter.txt && ! grep -qi 'adapter: OpenGL' /tmp/kiln-adapter.txt; }
if [[ $LOCAL != 1 ]] && { ((arc != 0)) || ! nvidia_vk; } && driver_exports; then
  echo "adapter missing, or not NVIDIA on Vulkan: retrying with the driver files exported"
  timeout 60 "${NODE_RUN[@]}" $D/scripts/gpu-device-adapter.mjs | tee /tmp/kiln-adapter.txt
  arc=${PIPESTATUS[0]}
fi
((arc == 0)) || FAILED=1
((arc == 0)) || echo "WARNING: no working WebGPU adapter (rc $arc): the tests will skip and the bench will fail"
[[ $LOCAL == 1 ]] || nvidia_vk || echo "WARNING: the adapter is not NVIDIA's on Vulkan: numbers below are not the H200's through Vulkan"
step_done setup 0 $((SECONDS - START)) "$(grep -m1 '^adapter:' /tmp/kiln-adapter.txt)"

# ---------------------------------------------------------------- steps
ITERS_WARM=${KILN_TORCH_ARGS:---size gpu --iters 20 --warmup 3}
TORCH_PY=bench/gpu/torch_bench.py
[[ -f $TORCH_PY ]] || TORCH_PY=$D/torch_bench.py

merge_torch() { # /tmp/kiln-torch/*.json (one per group, in order) -> $OUT/gpu-torch.json
  "$PY" - "$OUT/gpu-torch.json" /tmp/kiln-torch <<'PY'
import json, os, sys
out_path, d = sys.argv[1], sys.argv[2]
merged = None
for name in sorted(f for f in os.listdir(d) if f.endswith('.status')):
    group, status = name[:-7], open(os.path.join(d, name)).read().strip()
    try:
        part = json.loads(open(os.path.join(d, group + '.json')).read().strip().split('\n')[-1])
    except Exception:
        part = {'results': {}, 'notes': []}
    if merged is None:
        merged = {k: v for k, v in part.items()}
        merged['results'], merged['notes'] = {}, []
        merged['groups'] = {}
    merged['groups'][group.split('-', 1)[1]] = status
    for k, v in part.items():
        if k not in ('results', 'notes', 'only') and k not in merged:
            merged[k] = v
    if 'error' in part:
        merged.setdefault('errors', []).append(f"{group}: {part['error']}")
    merged['results'].update(part.get('results', {}))
    merged['notes'] += [n for n in part.get('notes', []) if n not in merged['notes']]
    if status != 'ok':
        merged['notes'].append(f"group {group.split('-', 1)[1]}: {status}")
if merged is not None:
    merged.pop('error', None)
    for k in ('copy', 'matmul'):  # measured by every group; the last group's, listed last
        if k in merged['results']:
            merged['results'][k] = merged['results'].pop(k)
    open(out_path, 'w').write(json.dumps(merged, indent=2) + '\n')
PY
}

merge_all() { # gpu-kiln.json + gpu-torch.json -> gpu.json
  [[ -f $OUT/gpu-kiln.json ]] || return 0
  "$PY" - "$OUT/gpu-kiln.json" "$OUT/gpu-torch.json" "$OUT/gpu.json" <<'PY'
import json, os, sys
k = json.load(open(sys.argv[1]))
k['torch'] = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else {'error': 'torch step did not run or wrote nothing'}
k['note'] = (k.get('note') or '') + '; kiln and torch sides run one after the other in one device call (scripts/gpu-device-run.sh)'
open(sys.argv[3], 'w').write(json.dumps(k, indent=2) + '\n')
PY
}

for s in $STEPS; do
  t0=$SECONDS
  case $s in
    tests)
      t=$(cap "${KILN_T_TESTS:-120}")
      say "tests: node --test .device/test/*.test.mjs (timeout ${t}s)"
      timeout -k 5 "$t" "${NODE_RUN[@]}" --test --test-reporter=spec --test-concurrency="${KILN_TEST_CONCURRENCY:-2}" $D/test/*.test.mjs 2>&1 | tee "$OUT/tests.log"
      rc=${PIPESTATUS[0]}
      step_done tests "$rc" $((SECONDS - t0)) "$(grep -E '^ℹ (tests|pass|fail|skipped) ' "$OUT/tests.log" | tr -d 'ℹ' | tr '\n' ' ')"
      ;;
    kiln)
      t=$(cap "${KILN_T_KILN:-200}")
      say "kiln: bench/gpu ${KILN_GPU_ARGS:---size gpu} --no-torch (timeout ${t}s)"
      # shellcheck disable=SC2086
      timeout -k 5 "$t" "${NODE_RUN[@]}" $D/bench/gpu.mjs ${KILN_GPU_ARGS:---size gpu} --no-torch --out "$OUT/gpu-kiln.json" >/dev/null
      rc=$?
      step_done kiln "$rc" $((SECONDS - t0)) "$([[ -f $OUT/gpu-kiln.json ]] && grep -m1 '"partial"' "$OUT/gpu-kiln.json" | tr -d ' ,')"
      merge_all
      ;;
    torch)
      t=$(cap "${KILN_T_TORCH:-150}")
      say "torch: $PY $TORCH_PY $ITERS_WARM, groups ${KILN_TORCH_GROUPS:-W1,W3,W4 W2,W6 W7} (timeout ${t}s in all)"
      rm -rf /tmp/kiln-torch && mkdir -p /tmp/kiln-torch
      end=$((SECONDS + t)); i=0; rc=0
      for g in ${KILN_TORCH_GROUPS:-W1,W3,W4 W2,W6 W7}; do
        i=$((i + 1)); tag=$(printf '%02d-%s' $i "$g")
        tg=$((end - SECONDS))
        if ((tg < 5)); then echo "skipped: no time left" >/tmp/kiln-torch/$tag.status; merge_torch; continue; fi
        echo "-- torch $g (timeout ${tg}s)"
        # shellcheck disable=SC2086
        PYTHONUNBUFFERED=1 timeout -k 5 "$tg" "$PY" "$TORCH_PY" $ITERS_WARM --only "$g" >/tmp/kiln-torch/$tag.json
        r=$?; ((r == 0)) || rc=$r
        case $r in 0) st=ok ;; 124 | 137) st="timed out after ${tg}s" ;; *) st="exited $r" ;; esac
        echo "$st" >/tmp/kiln-torch/$tag.status
        merge_torch
      done
      step_done torch "$rc" $((SECONDS - t0)) "$(cat /tmp/kiln-torch/*.status 2>/dev/null | tr '\n' ' ')"
      merge_all
      ;;
    overhead)
      t=$(cap "${KILN_T_OVERHEAD:-45}")
      say "overhead: bench/webgpu-overhead (timeout ${t}s)"
      timeout -k 5 "$t" "${NODE_RUN[@]}" $D/bench/webgpu-overhead.mjs 2>&1 | tee "$OUT/webgpu-overhead.txt"
      step_done overhead "${PIPESTATUS[0]}" $((SECONDS - t0))
      ;;
    *) echo "unknown step $s (tests kiln torch overhead)" ;;
  esac
done

say "summary (rc 124: the step's timeout)"
printf '%s\n' "${SUMMARY[@]}"
ls -la "$OUT"
exec >&- 2>&-
wait $TEE_PID 2>/dev/null # run.log complete before the tool collects $OUT
exit $FAILED
