// The user's source location of a graph break: the first stack frame outside kiln.

const kilnSrc = (() => {
  try {
    return decodeURIComponent(new URL('../..', import.meta.url).pathname);
  } catch {
    return '\u0000';
  }
})();

export function userLocation(): string {
  const stack = new Error().stack?.split('\n').slice(1) ?? [];
  for (const line of stack) {
    const m = /\(?((?:file:\/\/)?[^\s()]+):(\d+):(\d+)\)?\s*$/.exec(line.trim());
    if (!m) continue;
    let file = m[1]!;
    if (file.startsWith('file://')) file = decodeURIComponent(new URL(file).pathname);
    if (file.startsWith(kilnSrc) || file.startsWith('node:') || file.includes('/node_modules/')) continue;
    const cwd = typeof process !== 'undefined' ? process.cwd() + '/' : '';
    return `${file.startsWith(cwd) ? file.slice(cwd.length) : file}:${m[2]}:${m[3]}`;
  }
  return '<unknown>';
}
