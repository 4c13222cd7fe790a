// WebGPU in Node through Dawn (the `webgpu` package), imported only from 'kilnjs/node' and only
// when asked for, so the browser bundle never sees it. Without a GPU driver Dawn's Vulkan
// path finds no adapter here (Debian 12's lavapipe is rejected; Mesa 25's, unpacked by
// scripts/lavapipe.sh, works when VK_ICD_FILENAMES points at it); the OpenGL backend on Mesa
// llvmpipe in compatibility mode works, so it is the fallback.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestWebGpuBackend as request, type WebGpuOptions } from './device.js';
import { WebGpuUnavailableError } from './errors.js';
import type { WebGpuBackend } from './index.js';

export interface NodeWebGpuOptions extends WebGpuOptions {
  /** Dawn toggles for create(), e.g. ['backend=opengl'] (default: try the native backend, then OpenGL) */
  readonly dawn?: readonly string[];
}

interface Dawn {
  create(o: string[]): GPU;
  globals: object;
}
let dawn: Dawn | null = null;
const instances: GPU[] = [];

async function loadDawn(): Promise<Dawn> {
  if (dawn) return dawn;
  try {
    const mod = (await import('webgpu')) as unknown as Dawn;
    // GPUBufferUsage and friends, which some WebGPU code expects as globals
    for (const [k, v] of Object.entries(mod.globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
    return (dawn = mod);
  } catch (e) {
    throw new WebGpuUnavailableError(`the \`webgpu\` package could not be loaded: ${(e as Error).message}`, 'requestWebGpuBackend', 'npm install webgpu');
  }
}

/** A WebGPU backend in Node (Dawn); see README.md for the software path. */
export async function requestWebGpuBackend(opts: NodeWebGpuOptions = {}): Promise<WebGpuBackend> {
  const d = await loadDawn();
  // Mesa's EGL needs these without a display (set before Dawn starts its OpenGL backend)
  process.env.EGL_PLATFORM ??= 'surfaceless';
  process.env.XDG_RUNTIME_DIR ??= mkdtempSync(join(tmpdir(), 'kiln-xdg-'));
  const attempts: { toggles: string[]; featureLevel?: 'compatibility' }[] = opts.dawn
    ? [{ toggles: [...opts.dawn], featureLevel: opts.featureLevel === 'core' ? undefined : opts.dawn.includes('backend=opengl') ? 'compatibility' : undefined }]
    : [{ toggles: [] }, { toggles: ['backend=opengl'], featureLevel: 'compatibility' }];
  const errors: string[] = [];
  for (const a of attempts) {
    try {
      const instance = d.create(a.toggles);
      // every Dawn instance stays referenced: a collected one (an attempt that found no
      // adapter) tore down state the working one uses, and crashed the process later
      instances.push(instance);
      return await request({ ...opts, gpu: instance, featureLevel: opts.featureLevel ?? a.featureLevel });
    } catch (e) {
      errors.push(`[${a.toggles.join(' ') || 'default'}] ${(e as Error).message.split('\n')[0]}`);
    }
  }
  throw new WebGpuUnavailableError(`no WebGPU adapter through Dawn: ${errors.join('; ')}`, 'requestWebGpuBackend', 'install a GPU driver, or for the software path the Mesa OpenGL libraries (Debian: libegl-mesa0 libgl1-mesa-dri libgbm1)');
}
