// Finds a key that appears twice in one object of a JSON text. JSON.parse keeps the last
// occurrence silently; a file format that names its records by key (safetensors) must refuse
// such a file instead. The text must already be valid JSON (parse it first).

/** The first repeated key, with the key of the object holding it (null at the top level). */
export function duplicateKey(text: string): { key: string; parent: string | null } | null {
  interface Frame { keys: Set<string> | null; expectKey: boolean; name: string | null }
  const stack: Frame[] = [];
  let lastKey: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return { key, parent: top.name };
        top.keys.add(key);
        top.expectKey = false;
        lastKey = key;
      }
      i = j;
    } else if (c === '{' || c === '[') {
      const parent = stack[stack.length - 1];
      stack.push({ keys: c === '{' ? new Set() : null, expectKey: c === '{', name: parent?.keys ? lastKey : null });
    } else if (c === '}' || c === ']') stack.pop();
    else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.keys) top.expectKey = true;
    }
  }
  return null;
}
