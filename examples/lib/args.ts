// Minimal command-line flag parsing for the examples: `--name value` and bare `--flag`.

export class Args {
  constructor(private readonly argv: readonly string[] = process.argv.slice(2)) {}

  has(name: string): boolean {
    return this.argv.includes(`--${name}`);
  }

  string(name: string): string | undefined {
    const i = this.argv.indexOf(`--${name}`);
    if (i < 0) return undefined;
    const v = this.argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
    return v;
  }

  /** A positive integer option, or undefined when absent. */
  int(name: string): number | undefined {
    const s = this.string(name);
    if (s === undefined) return undefined;
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} needs a positive integer, got ${s}`);
    return n;
  }

  /** A string option restricted to `choices`. */
  choice<T extends string>(name: string, choices: readonly T[]): T | undefined {
    const s = this.string(name);
    if (s === undefined) return undefined;
    if (!(choices as readonly string[]).includes(s)) throw new Error(`--${name} must be one of ${choices.join(', ')}, got ${s}`);
    return s as T;
  }
}
