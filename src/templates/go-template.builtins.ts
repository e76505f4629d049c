/**
 * Go's builtin template functions (`text/template/funcs.go`): comparison (eq, ne, lt, le, gt, ge), index, slice,
 * len, not, print/printf/println, html, js, urlquery and call, with Go's error texts. The executor
 * (go-template.executor.ts) evaluates `and`/`or` lazily itself.
 */
import { goQuote } from './go-template.tokens';
import { formatValue, goLen, goTypeName, isTrue, kindOf, sprint, sprintf, sprintln } from './go-values';

/** A template function: fixed parameter count, variadic or not, and how string-typed parameters are checked. */
export interface GoFunc {
  fn: (...args: unknown[]) => unknown;
  /** Number of fixed parameters. */
  fixed: number;
  variadic: boolean;
  /** Indexes of parameters typed `string` (variadic index = applies to the rest). */
  stringParams?: number[];
}

/** An error returned by a template function (reported as `error calling <name>: <msg>`). */
export class FuncError extends Error {}

type BasicKind = 'invalid' | 'bool' | 'int' | 'float' | 'string' | 'other';

function basicKind(v: unknown): BasicKind {
  const k = kindOf(v);
  if (k === 'invalid' || k === 'bool' || k === 'int' || k === 'float' || k === 'string') return k;
  return 'other';
}

function eqValues(a: unknown, ...rest: unknown[]): boolean {
  if (rest.length === 0) throw new FuncError('missing argument for comparison');
  const k1 = basicKind(a);
  for (const b of rest) {
    const k2 = basicKind(b);
    let truth = false;
    if (k1 !== k2) {
      if (a !== null && a !== undefined && b !== null && b !== undefined) {
        throw new FuncError('incompatible types for comparison');
      }
    } else if (k1 === 'other') {
      const ka = kindOf(a);
      if (ka === 'slice' || ka === 'map' || ka === 'func' || kindOf(b) !== ka) {
        throw new FuncError(`non-comparable type ${formatValue(a, 1)}: ${goTypeName(a)}`);
      }
      truth = a === b;
    } else if (k1 === 'invalid') {
      truth = true;
    } else {
      truth = a === b;
    }
    if (truth) return true;
  }
  return false;
}

function ltValues(a: unknown, b: unknown): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (k1 === 'invalid' || k1 === 'other' || k2 === 'invalid' || k2 === 'other') {
    throw new FuncError('invalid type for comparison');
  }
  if (k1 !== k2) throw new FuncError('incompatible types for comparison');
  if (k1 === 'bool') throw new FuncError('invalid type for comparison');
  if (k1 === 'string') return Buffer.compare(Buffer.from(a as string), Buffer.from(b as string)) < 0;
  return (a as number) < (b as number);
}

function indexArg(index: unknown, cap: number): number {
  if (typeof index === 'bigint') {
    if (index < 0n || index > BigInt(cap)) throw new FuncError(`index out of range: ${index}`);
    return Number(index);
  }
  if (index === null || index === undefined) throw new FuncError('cannot index slice/array with nil');
  throw new FuncError(`cannot index slice/array with type ${goTypeName(index)}`);
}

function indexFn(item: unknown, ...indexes: unknown[]): unknown {
  if (item === null || item === undefined) throw new FuncError('index of untyped nil');
  let cur: unknown = item;
  for (const index of indexes) {
    if (cur === null || cur === undefined) throw new FuncError('index of nil pointer');
    const k = kindOf(cur);
    if (k === 'slice' || k === 'string') {
      const len = goLen(cur) ?? 0;
      const x = indexArg(index, len);
      if (x >= len) throw new FuncError(`index out of range: ${x}`);
      cur = k === 'string' ? BigInt(Buffer.from(cur as string)[x]) : (cur as unknown[])[x];
    } else if (k === 'map') {
      if (typeof index !== 'string') {
        if (index === null || index === undefined) {
          cur = undefined;
          continue;
        }
        throw new FuncError(`value has type ${goTypeName(index)}; should be string`);
      }
      cur =
        cur instanceof Map
          ? cur.get(index)
          : Object.prototype.hasOwnProperty.call(cur, index)
            ? (cur as Record<string, unknown>)[index]
            : undefined;
    } else {
      throw new FuncError(`can't index item of type ${goTypeName(cur)}`);
    }
  }
  return cur;
}

function sliceFn(item: unknown, ...indexes: unknown[]): unknown {
  if (item === null || item === undefined) throw new FuncError('slice of untyped nil');
  if (indexes.length > 3) throw new FuncError(`too many slice indexes: ${indexes.length}`);
  const k = kindOf(item);
  if (k !== 'string' && k !== 'slice') throw new FuncError(`can't slice item of type ${goTypeName(item)}`);
  if (k === 'string' && indexes.length === 3) throw new FuncError('cannot 3-index slice a string');
  const len = goLen(item) ?? 0;
  const idx = [0, len, len];
  indexes.forEach((ix, i) => (idx[i] = indexArg(ix, len)));
  if (idx[0] > idx[1]) throw new FuncError(`invalid slice index: ${idx[0]} > ${idx[1]}`);
  if (indexes.length === 3 && idx[1] > idx[2]) throw new FuncError(`invalid slice index: ${idx[1]} > ${idx[2]}`);
  if (k === 'string') {
    return Buffer.from(item as string)
      .subarray(idx[0], idx[1])
      .toString('utf8');
  }
  return (item as unknown[]).slice(idx[0], idx[1]);
}

function lenFn(item: unknown): bigint {
  if (item === null || item === undefined) throw new FuncError('len of nil pointer');
  const n = goLen(item);
  if (n === null) throw new FuncError(`len of type ${goTypeName(item)}`);
  return BigInt(n);
}

function evalArgsString(args: unknown[]): string {
  if (args.length === 1 && typeof args[0] === 'string') return args[0];
  return sprint(args);
}

/** Go's template.HTMLEscapeString. */
export function htmlEscape(s: string): string {
  return s.replace(/[\0"'&<>]/g, (c) =>
    c === '\0'
      ? '\uFFFD'
      : c === '"'
        ? '&#34;'
        : c === "'"
          ? '&#39;'
          : c === '&'
            ? '&amp;'
            : c === '<'
              ? '&lt;'
              : '&gt;',
  );
}

/** Go's template.JSEscapeString. */
export function jsEscape(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '\\':
        out += '\\\\';
        continue;
      case "'":
        out += "\\'";
        continue;
      case '"':
        out += '\\"';
        continue;
      case '<':
        out += '\\u003C';
        continue;
      case '>':
        out += '\\u003E';
        continue;
      case '&':
        out += '\\u0026';
        continue;
      case '=':
        out += '\\u003D';
        continue;
    }
    if (c < 0x20) out += '\\u00' + c.toString(16).toUpperCase().padStart(2, '0');
    else if (c >= 0x7f && c < 0xa0) out += '\\u' + c.toString(16).toUpperCase().padStart(4, '0');
    else out += ch;
  }
  return out;
}

/** Go's url.QueryEscape. */
export function urlQueryEscape(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === ' ') out += '+';
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** Go's builtin template functions (text/template/funcs.go). `and`/`or` are handled lazily by the executor. */
export const BUILTINS: Record<string, GoFunc> = {
  and: { fn: () => undefined, fixed: 1, variadic: true },
  or: { fn: () => undefined, fixed: 1, variadic: true },
  not: { fn: (a) => !isTrue(a), fixed: 1, variadic: false },
  len: { fn: lenFn, fixed: 1, variadic: false },
  index: { fn: indexFn, fixed: 1, variadic: true },
  slice: { fn: sliceFn, fixed: 1, variadic: true },
  eq: { fn: eqValues, fixed: 1, variadic: true },
  ne: { fn: (a, b) => !eqValues(a, b), fixed: 2, variadic: false },
  lt: { fn: ltValues, fixed: 2, variadic: false },
  le: { fn: (a, b) => ltValues(a, b) || eqValues(a, b), fixed: 2, variadic: false },
  gt: { fn: (a, b) => !(ltValues(a, b) || eqValues(a, b)), fixed: 2, variadic: false },
  ge: { fn: (a, b) => !ltValues(a, b), fixed: 2, variadic: false },
  print: { fn: (...a) => sprint(a), fixed: 0, variadic: true },
  printf: {
    fn: (f, ...a) => sprintf(f as string, a, goQuote),
    fixed: 1,
    variadic: true,
    stringParams: [0],
  },
  println: { fn: (...a) => sprintln(a), fixed: 0, variadic: true },
  html: { fn: (...a) => htmlEscape(evalArgsString(a)), fixed: 0, variadic: true },
  js: { fn: (...a) => jsEscape(evalArgsString(a)), fixed: 0, variadic: true },
  urlquery: { fn: (...a) => urlQueryEscape(evalArgsString(a)), fixed: 0, variadic: true },
  call: {
    fn: (f, ...a) => {
      if (typeof f !== 'function') {
        if (f === null || f === undefined) throw new FuncError('call of nil');
        throw new FuncError(`non-function of type ${goTypeName(f)}`);
      }
      return (f as (...x: unknown[]) => unknown)(...a);
    },
    fixed: 1,
    variadic: true,
  },
};
