/**
 * The Go value model of the template engine (see go-values.ts for how JS values stand for Go values): the String()
 * and type-name symbols, GoStruct, Go kinds and type names, map ordering, len and template truth.
 */

/** Symbol for a `String() string` method: printing with %v / %s uses it. */
export const GO_STRING = Symbol('goString');
/** Symbol for a Go type name used in error messages (e.g. `[]api.Tool`). */
export const GO_TYPE = Symbol('goType');
/** Symbol marking a nil slice (prints `[]`, JSON `null`). */
export const GO_NIL = Symbol('goNil');

/** One JSON field of a struct: name, value and whether `omitempty` applies. */
export interface JsonField {
  key: string;
  value: unknown;
  omitEmpty?: boolean;
}

/** A Go struct value: named fields (in declaration order) plus optional String() and JSON encoding. */
export class GoStruct {
  constructor(
    readonly typeName: string,
    readonly fields: Record<string, unknown>,
    readonly options: { string?: () => string; json?: () => JsonField[] | unknown } = {},
  ) {}
}

/** Go type name of a value, as used in Go error messages. */
export function goTypeName(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'object' || typeof v === 'function') {
    const t = (v as { [GO_TYPE]?: string })[GO_TYPE];
    if (t) return t;
  }
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'function') return 'func';
  if (Array.isArray(v)) return '[]interface {}';
  if (v instanceof GoStruct) return v.typeName;
  if (v instanceof Uint8Array) return '[]uint8';
  return 'map[string]interface {}';
}

export type Kind = 'invalid' | 'string' | 'bool' | 'int' | 'float' | 'slice' | 'map' | 'struct' | 'func';

/** Go reflect kind of a value. */
export function kindOf(v: unknown): Kind {
  if (v === null || v === undefined) return 'invalid';
  switch (typeof v as string) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'bigint':
      return 'int';
    case 'number':
      return 'float';
    case 'function':
      return 'func';
  }
  if (Array.isArray(v) || v instanceof Uint8Array) return 'slice';
  if (v instanceof GoStruct) return 'struct';
  return 'map';
}

/** Sorted [key, value] pairs of a map value (Go prints and ranges maps in key order). */
export function mapEntries(v: unknown): [unknown, unknown][] {
  let entries: [unknown, unknown][];
  if (v instanceof Map) entries = [...v.entries()];
  else entries = Object.entries(v as Record<string, unknown>);
  return entries.sort((a, b) => compareKeys(a[0], b[0]));
}

/**
 * Go's string order (bytes of the UTF-8 encoding). Equal to UTF-16 code-unit order up to the first difference unless
 * a surrogate is involved there (then the UTF-8 bytes are compared), so no string is encoded in the common case: map
 * ordering is charged a step per entry by the executor's budget, which needs it cheap.
 */
function compareGoStrings(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if ((x >= 0xd800 && x <= 0xdfff) || (y >= 0xd800 && y <= 0xdfff)) {
      return Buffer.compare(Buffer.from(a), Buffer.from(b));
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length < 0 ? -1 : a.length > b.length ? 1 : 0;
}

function compareKeys(a: unknown, b: unknown): number {
  if (typeof a === 'string' && typeof b === 'string') return compareGoStrings(a, b);
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) {
    return a < b ? -1 : a > b ? 1 : 0;
  }
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

/** Number of entries / elements / bytes (Go's len). */
export function goLen(v: unknown): number | null {
  switch (kindOf(v) as string) {
    case 'string':
      return Buffer.byteLength(v as string, 'utf8');
    case 'slice':
      return (v as unknown[]).length;
    case 'map':
      return v instanceof Map ? v.size : Object.keys(v as object).length;
    default:
      return null;
  }
}

/** Go's template truth: false for nil, false, 0, "", empty slice/map; structs and funcs are true. */
export function isTrue(v: unknown): boolean {
  switch (kindOf(v) as string) {
    case 'invalid':
      return false;
    case 'bool':
      return v as boolean;
    case 'int':
      return (v as bigint) !== 0n;
    case 'float':
      return (v as number) !== 0;
    case 'string':
    case 'slice':
    case 'map':
      return (goLen(v) ?? 0) > 0;
    default:
      return true;
  }
}

/** Makes an empty nil slice (`[]` with %v, `null` in JSON). */
export function nilSlice<T>(): T[] {
  const a: T[] = [];
  Object.defineProperty(a, GO_NIL, { value: true });
  return a;
}

/** Attaches a Go `String()` method (and optionally a type name) to an object or array, non-enumerably. */
export function withStringer<T extends object>(v: T, fn: () => string, typeName?: string): T {
  Object.defineProperty(v, GO_STRING, { value: fn });
  if (typeName) Object.defineProperty(v, GO_TYPE, { value: typeName });
  return v;
}
