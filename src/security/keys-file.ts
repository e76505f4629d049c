import { isMap, isNode, isSeq, LineCounter, parseDocument } from 'yaml';
import { MAX_API_KEY_LENGTH } from './header-values';
import type { TenantLimits, TenantPolicy } from './tenant-policy';

/** One key of the keys file, with its policy (absent for a plain key line: an unlimited admin). */
export interface KeyEntry {
  /** The key itself: compared, never logged. */
  key: string;
  policy?: TenantPolicy;
}

/**
 * A keys file that cannot be used: a YAML/JSON syntax error or a field that fails validation. The message names the
 * line (and column) or the field (`keys[2].limits.weight`), never a key.
 */
export class KeysFileError extends Error {
  override readonly name = 'KeysFileError';
}

/** Longest policy `name`, characters (names label metrics, so they must stay short). */
export const MAX_POLICY_NAME_LENGTH = 100;

/** The limits' integer fields (every one a positive integer), and `weight` (a positive number). */
const INTEGER_LIMITS = [
  'requests_per_minute',
  'tokens_per_minute',
  'tokens_per_day',
  'concurrent_requests',
  'max_output_tokens',
  'max_context',
] as const satisfies readonly (keyof TenantLimits)[];
const LIMIT_FIELDS: readonly string[] = [...INTEGER_LIMITS, 'weight'];
const ENTRY_FIELDS: readonly string[] = ['key', 'name', 'role', 'models', 'limits'];

/** Keys of a keys file: one per line; blank lines and lines starting with `#` are skipped, whitespace trimmed. */
export function parseKeysFile(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/**
 * Whether a keys file is a YAML or JSON document rather than key lines: its first line that is neither blank nor a
 * `#` comment starts with `{` (JSON), `---` or `%` (a YAML document marker or directive), or is a `keys:` mapping key
 * (`keys:` followed by nothing or a space). A key never has these shapes in practice (a key line is one token); a
 * one-line file holding a key is key lines.
 */
export function isKeysDocument(text: string): boolean {
  const first = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .find((line) => line !== '' && !line.startsWith('#'));
  if (first === undefined) return false;
  return first.startsWith('{') || first.startsWith('---') || first.startsWith('%') || /^keys\s*:(\s|$)/.test(first);
}

/**
 * Reads a keys file (docs/security.md "Tenants"): key lines ({@link parseKeysFile}; entries without a policy), or a
 * YAML/JSON document `{"keys": [{"key", "name", "role", "models", "limits": {…}}]}` (issue 33; field names exactly
 * those of {@link TenantPolicy}; every field but `key` optional).
 * @returns the entries, in file order.
 * @throws KeysFileError on a syntax error (line and column), an unknown field (named), a value of the wrong type or
 *   range (the field's path), the same key twice, or a `models` list on a key whose role is not `user`.
 */
export function readKeysFile(text: string): KeyEntry[] {
  if (!isKeysDocument(text)) return parseKeysFile(text).map((key) => ({ key }));
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const syntax = doc.errors[0];
  if (syntax) {
    // The parser's message only: its pretty form quotes the offending line, which may hold a key.
    const at = lines.linePos(syntax.pos[0]);
    throw new KeysFileError(`syntax error at line ${at.line}, column ${at.col}: ${syntax.message}`);
  }
  const root = doc.contents;
  if (!isMap(root)) throw new KeysFileError('the document must be a mapping with a `keys` list');
  const keysNode = root.get('keys', true);
  if (!isSeq(keysNode)) throw new KeysFileError('`keys` must be a list of entries');
  const data = doc.toJS() as Record<string, unknown>;
  rejectUnknown(data, ['keys'], '');
  const raw = data.keys as unknown[];
  const seen = new Map<string, number>();
  return raw.map((item, index) => {
    const node = keysNode.items[index];
    const offset = isNode(node) ? node.range?.[0] : undefined;
    const where = `keys[${index}]${offset !== undefined ? ` (line ${lines.linePos(offset).line})` : ''}`;
    try {
      const entry = validateEntry(item);
      const earlier = seen.get(entry.key);
      if (earlier !== undefined) throw new KeysFileError(`the same key as keys[${earlier}]`);
      seen.set(entry.key, index);
      return entry;
    } catch (err) {
      throw new KeysFileError(`${where}: ${(err as Error).message}`);
    }
  });
}

/** Validates one entry of `keys` (the messages name the field relative to the entry). */
function validateEntry(item: unknown): KeyEntry {
  if (!isRecord(item)) throw new KeysFileError('an entry must be a mapping with at least `key`');
  rejectUnknown(item, ENTRY_FIELDS, '');
  const { key, name, role, models, limits } = item;
  if (typeof key !== 'string') {
    throw new KeysFileError('`key` must be a string (quote a key that YAML reads as a number)');
  }
  const trimmed = key.trim();
  if (trimmed === '') throw new KeysFileError('`key` must not be empty');
  if (trimmed.length > MAX_API_KEY_LENGTH) {
    throw new KeysFileError(`\`key\` is longer than ${MAX_API_KEY_LENGTH} characters: no request could present it`);
  }
  const policy: TenantPolicy = {};
  if (name !== undefined) {
    if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_POLICY_NAME_LENGTH) {
      throw new KeysFileError(`\`name\` must be a non-empty string of at most ${MAX_POLICY_NAME_LENGTH} characters`);
    }
    policy.name = name.trim();
  }
  if (role !== undefined) {
    if (role !== 'admin' && role !== 'user') throw new KeysFileError('`role` must be "admin" or "user"');
    policy.role = role;
  }
  if (models !== undefined) {
    if (!Array.isArray(models) || !models.every((m) => typeof m === 'string' && m.trim() !== '')) {
      throw new KeysFileError('`models` must be a list of model names or globs (non-empty strings)');
    }
    if (policy.role !== 'user') {
      throw new KeysFileError('`models` limits a `user` key only (an admin sees every model): add `role: user`');
    }
    policy.models = models.map((m: string) => m.trim());
  }
  if (limits !== undefined) policy.limits = validateLimits(limits);
  return { key: trimmed, policy };
}

/** Validates `limits`: known fields only, positive integers, `weight` a positive number. */
function validateLimits(limits: unknown): TenantLimits {
  if (!isRecord(limits)) throw new KeysFileError('`limits` must be a mapping');
  rejectUnknown(limits, LIMIT_FIELDS, 'limits.');
  const out: TenantLimits = {};
  for (const field of INTEGER_LIMITS) {
    const value = limits[field];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      throw new KeysFileError(`\`limits.${field}\` must be a positive integer`);
    }
    out[field] = value;
  }
  if (limits.weight !== undefined) {
    const weight = limits.weight;
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0) {
      throw new KeysFileError('`limits.weight` must be a positive number');
    }
    out.weight = weight;
  }
  return out;
}

/**
 * A field name as a message shows it: names of letters and `_` (every real field) as they are; anything else (which
 * might be a key written where a field name goes) by its length only, so no key reaches a log.
 */
function shownField(field: string): string {
  return /^[A-Za-z_]{1,40}$/.test(field) ? field : `<${field.length} characters>`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Refuses fields outside `known`, naming every one of them (prefixed with `prefix`). */
function rejectUnknown(record: Record<string, unknown>, known: readonly string[], prefix: string): void {
  const unknown = Object.keys(record).filter((field) => !known.includes(field));
  if (unknown.length === 0) return;
  const names = unknown.map((field) => `\`${prefix}${shownField(field)}\``).join(', ');
  throw new KeysFileError(
    `unknown field${unknown.length > 1 ? 's' : ''} ${names} (known: ${known.map((f) => prefix + f).join(', ')})`,
  );
}
