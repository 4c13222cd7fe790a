// Dim coalescing for strided loops (PyTorch's TensorIterator idea): adjacent dims that
// every operand walks contiguously merge into one, so most kernels run 1-D or 2-D loops.

export interface Coalesced {
  shape: number[];
  strides: number[][];
}

export function coalesce(shape: readonly number[], stridesList: readonly (readonly number[])[]): Coalesced {
  const outShape: number[] = [];
  const outStrides: number[][] = stridesList.map(() => []);
  for (let d = 0; d < shape.length; d++) {
    const size = shape[d]!;
    if (size === 1) continue; // size-1 dims never move a pointer
    const last = outShape.length - 1;
    if (last >= 0 && stridesList.every((s, k) => outStrides[k]![last] === s[d]! * size)) {
      outShape[last]! *= size;
      stridesList.forEach((s, k) => (outStrides[k]![last] = s[d]!));
    } else {
      outShape.push(size);
      stridesList.forEach((s, k) => outStrides[k]!.push(s[d]!));
    }
  }
  if (outShape.length === 0) {
    outShape.push(1);
    outStrides.forEach((s) => s.push(0));
  }
  return { shape: outShape, strides: outStrides };
}
