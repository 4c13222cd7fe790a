// Grad mode: whether ops record the autograd graph.

let enabled = true;

export function isGradEnabled(): boolean {
  return enabled;
}

export function setGradEnabled(v: boolean): void {
  enabled = v;
}

/** Runs fn without recording gradients (torch.no_grad). */
export function noGrad<T>(fn: () => T): T {
  const prev = enabled;
  enabled = false;
  try {
    return fn();
  } finally {
    enabled = prev;
  }
}

/** Runs fn with gradient recording on (torch.enable_grad). */
export function enableGrad<T>(fn: () => T): T {
  const prev = enabled;
  enabled = true;
  try {
    return fn();
  } finally {
    enabled = prev;
  }
}
