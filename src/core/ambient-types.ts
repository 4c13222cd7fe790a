// Fallbacks for the platform types that kiln's public declarations name, for consumers whose
// `lib` lacks them (e.g. a Node project with lib ES2022 and no DOM, type-checking kiln's .d.ts
// with skipLibCheck off): Symbol.dispose (`using`), WebAssembly.Memory and the WebGPU objects.
// Each declaration merges with the real one (TypeScript's DOM and esnext libs, @types/node,
// @webgpu/types) where that exists, so it changes nothing there; elsewhere the WebGPU handles
// are opaque. src/index.ts and src/node.ts reference this file, so every consumer gets it.

declare global {
  interface SymbolConstructor {
    readonly dispose: unique symbol;
  }
  namespace WebAssembly {
    interface Memory {}
  }
  interface GPU {}
  interface GPUBindGroup {}
  interface GPUBindGroupLayout {}
  interface GPUBuffer {}
  interface GPUCommandEncoder {}
  interface GPUComputePassDescriptor {}
  interface GPUComputePassEncoder {}
  interface GPUComputePipeline {}
  interface GPUDevice {}
  interface GPUSupportedLimits {}
}

export {};
