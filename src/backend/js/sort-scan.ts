// Row kernels along the middle dim of contiguous [outer, len, inner] data for the JS backend:
// sort (the int32 permutation of each row) and scans (running product; index of the running
// max / min). Values are compared as torch does: NaN sorts as the largest value; a NaN is the
// running max / min from where it appears, and ties move the index to the later element.

import type { TypedArray } from '../../core/dtype.js';
import type { AlongDimArgs, ScanOp, ViewArg } from '../../ir/kernel-spec.js';

type Data = (v: ViewArg) => TypedArray;

/** Ascending order with NaN last (descending: NaN first); 0 for ties, so a stable sort keeps index order. */
function compareAscending(a: number, b: number): number {
  if (a < b) return -1;
  if (a > b) return 1;
  const an = a !== a, bn = b !== b;
  return an === bn ? 0 : an ? 1 : -1;
}

export function sortIndices(args: AlongDimArgs, descending: boolean, data: Data): void {
  const src = data(args.input), out = data(args.out);
  const { outer, len, inner } = args;
  const row = new Float64Array(len);
  const order = new Array<number>(len);
  const cmp = descending ? (i: number, j: number) => compareAscending(row[j]!, row[i]!) : (i: number, j: number) => compareAscending(row[i]!, row[j]!);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const base = o * len * inner + i;
      for (let l = 0; l < len; l++) {
        row[l] = src[args.input.offset + base + l * inner]!;
        order[l] = l;
      }
      order.sort(cmp); // Array.prototype.sort is stable
      for (let l = 0; l < len; l++) out[args.out.offset + base + l * inner] = order[l]!;
    }
  }
}

export function scan(args: AlongDimArgs, op: ScanOp, intProduct: boolean, data: Data): void {
  const src = data(args.input), out = data(args.out);
  const { outer, len, inner } = args;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      let p = o * len * inner + i;
      if (op === 'prod') {
        // float products run in double; int32 ones wrap as int32 multiplication does
        let acc = 1;
        for (let l = 0; l < len; l++, p += inner) {
          const v = src[args.input.offset + p]!;
          acc = intProduct ? Math.imul(acc, v) : acc * v;
          out[args.out.offset + p] = acc;
        }
        continue;
      }
      let best = NaN, at = 0;
      for (let l = 0; l < len; l++, p += inner) {
        const v = src[args.input.offset + p]!;
        if (l === 0 || v !== v || (best === best && (op === 'argmax' ? v >= best : v <= best))) {
          best = v;
          at = l;
        }
        out[args.out.offset + p] = at;
      }
    }
  }
}
