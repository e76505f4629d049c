/** Go's `encoding/json` marshalling of template values (the `json` template function, tool schemas). */
import { formatFloatG } from './go-values.fmt';
import { GO_NIL, GoStruct, goLen, JsonField, mapEntries } from './go-values.kinds';

const HEX = '0123456789abcdef';

/** Go's encoding/json string encoding (HTML-safe: <, >, & escaped; U+2028/2029 escaped). */
export function jsonQuote(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20 || ch === '<' || ch === '>' || ch === '&') out += '\\u00' + HEX[c >> 4] + HEX[c & 15];
    else if (c === 0x2028 || c === 0x2029) out += '\\u202' + (c === 0x2028 ? '8' : '9');
    else if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += ch + s[i + 1];
        i++;
      } else out += '\\ufffd';
    } else if (c >= 0xdc00 && c <= 0xdfff) out += '\\ufffd';
    else out += ch;
  }
  return out + '"';
}

function jsonFloat(f: number): string {
  if (!Number.isFinite(f)) throw new Error(`json: unsupported value: ${formatFloatG(f)}`);
  // Go uses 'f' format unless the exponent is small/large, like JS; the exponent form differs only in padding.
  return JSON.stringify(f);
}

/** Go's json.Marshal of a value: struct fields in order (omitempty honoured), map keys sorted. */
export function goJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (v instanceof GoStruct) {
    const j = v.options.json ? v.options.json() : Object.entries(v.fields).map(([key, value]) => ({ key, value }));
    if (Array.isArray(j) && j.every((f) => f && typeof f === 'object' && 'key' in f)) {
      const parts: string[] = [];
      for (const f of j as JsonField[]) {
        if (f.omitEmpty && isEmptyJson(f.value)) continue;
        parts.push(jsonQuote(f.key) + ':' + goJson(f.value));
      }
      return '{' + parts.join(',') + '}';
    }
    return goJson(j);
  }
  switch (typeof v) {
    case 'symbol':
    case 'undefined':
    case 'object':
      break;
    case 'string':
      return jsonQuote(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return v.toString();
    case 'number':
      return jsonFloat(v);
    case 'function':
      throw new Error('json: unsupported type: func()');
  }
  if (Array.isArray(v)) {
    if ((v as { [GO_NIL]?: boolean })[GO_NIL] && v.length === 0) return 'null';
    return '[' + v.map((e) => goJson(e)).join(',') + ']';
  }
  if (v instanceof Uint8Array) return jsonQuote(Buffer.from(v).toString('base64'));
  return (
    '{' +
    mapEntries(v)
      .map(([k, e]) => jsonQuote(String(k)) + ':' + goJson(e))
      .join(',') +
    '}'
  );
}

function isEmptyJson(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === '' || v === 0 || v === 0n) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (v instanceof GoStruct) return false;
  if (typeof v === 'object') return (goLen(v) ?? 1) === 0;
  return false;
}
