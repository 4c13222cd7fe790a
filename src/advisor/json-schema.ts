// A small validator for the subset of JSON Schema (2020-12) that
// docs/advisor-report.schema.json uses: type (a name or a list), properties, required,
// additionalProperties (boolean or a schema), items, enum, const, minimum, maximum,
// minItems, minLength and $ref to "#/$defs/...". Annotations (title, description, $id,
// $schema, examples) are ignored. Any other keyword is an error, so the schema cannot
// silently rely on something this validator does not check.

export type JsonSchema = boolean | { [k: string]: unknown };

const KNOWN = new Set([
  'type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'minimum', 'maximum', 'minItems', 'minLength', '$ref', '$defs',
  'title', 'description', '$id', '$schema', '$comment', 'examples',
]);

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(v: unknown, t: string): boolean {
  const a = typeOf(v);
  return a === t || (t === 'number' && a === 'integer');
}

/** Errors as 'path: message'; empty when `value` validates. */
export function validate(schema: JsonSchema, value: unknown, root: JsonSchema = schema, path = '$'): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${path}: no value is allowed here`];
  const errs: string[] = [];
  for (const k of Object.keys(schema)) if (!KNOWN.has(k)) errs.push(`${path}: schema keyword '${k}' is not supported by this validator`);
  if (typeof schema.$ref === 'string') {
    const m = /^#\/\$defs\/(.+)$/.exec(schema.$ref);
    const defs = (typeof root === 'object' ? root.$defs : undefined) as Record<string, JsonSchema> | undefined;
    const target = m ? defs?.[m[1]!] : undefined;
    if (target === undefined) return [...errs, `${path}: unresolved $ref ${schema.$ref}`];
    errs.push(...validate(target, value, root, path));
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    if (!types.some((t) => typeMatches(value, t))) return [...errs, `${path}: expected ${types.join(' or ')}, got ${typeOf(value)}`];
  }
  if (schema.enum !== undefined && !(schema.enum as unknown[]).some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errs.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) errs.push(`${path}: expected ${JSON.stringify(schema.const)}, got ${JSON.stringify(value)}`);
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) errs.push(`${path}: ${value} < minimum ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) errs.push(`${path}: ${value} > maximum ${schema.maximum}`);
  }
  if (typeof value === 'string' && typeof schema.minLength === 'number' && value.length < schema.minLength) errs.push(`${path}: shorter than ${schema.minLength}`);
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) errs.push(`${path}: fewer than ${schema.minItems} items`);
    if (schema.items !== undefined) value.forEach((v, i) => errs.push(...validate(schema.items as JsonSchema, v, root, `${path}[${i}]`)));
  }
  if (typeOf(value) === 'object') {
    const o = value as Record<string, unknown>;
    const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
    for (const r of (schema.required ?? []) as string[]) if (!(r in o)) errs.push(`${path}: missing required property '${r}'`);
    for (const [k, v] of Object.entries(o)) {
      if (k in props) errs.push(...validate(props[k]!, v, root, `${path}.${k}`));
      else if (schema.additionalProperties === false) errs.push(`${path}: unexpected property '${k}'`);
      else if (typeof schema.additionalProperties === 'object' && schema.additionalProperties !== null) errs.push(...validate(schema.additionalProperties as JsonSchema, v, root, `${path}.${k}`));
    }
  }
  return errs;
}
