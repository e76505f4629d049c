import { InvalidRequestError } from '../errors';

/**
 * Deepest nesting of arrays and objects a request body may have (docs/security.md). Real requests stay far below it
 * (a tool's JSON Schema is a few dozen levels); the validation pipe and class-transformer recurse per level and
 * overflow the stack near 5,000, so deeper bodies are refused before they reach them. Go's encoding/json (Ollama)
 * stops at 10,000.
 */
export const MAX_JSON_DEPTH = 512;

/**
 * Most members (key/value pairs) one object of a request body may have (docs/security.md): 400 beyond it, before
 * parsing. Ollama has no such limit, but a flood of keys is the costliest JSON there is to parse and walk (V8 builds
 * one hidden class per new key: 100,000 keys in `options` took ~100 ms in JSON.parse and as much again in every walk
 * over the object, all on the event loop). Real requests stay far below it (`options` has ~40 known names, a tool's
 * JSON Schema a few hundred properties).
 */
export const MAX_JSON_MEMBERS = 10_000;

/** What {@link jsonShape} measured. */
export interface JsonShape {
  /** Deepest `[`/`{` nesting reached, at most `depthLimit + 1`. */
  depth: number;
  /** Most members seen in one object, at most `membersLimit + 1`. */
  members: number;
}

/**
 * Deepest `[`/`{` nesting of a JSON text and the most members of one object (its `:` separators), counted by one
 * linear scan that skips string contents (escapes included) and stops as soon as either limit is exceeded. Not a
 * validator: malformed text is left to JSON.parse.
 */
export function jsonShape(
  text: string,
  depthLimit: number = MAX_JSON_DEPTH,
  membersLimit: number = MAX_JSON_MEMBERS,
): JsonShape {
  let depth = 0;
  let deepest = 0;
  let most = 0;
  let inString = false;
  // Members of the open container at each depth (a ':' only appears directly inside an object in valid JSON).
  const members = new Float64Array(Math.min(depthLimit, text.length) + 2);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        i++;
      } // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x3a) {
      if (depth > 0 && ++members[depth] > most) {
        most = members[depth];
        if (most > membersLimit) return { depth: deepest, members: most };
      }
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > depthLimit) return { depth: deepest, members: most };
      }
      members[depth] = 0;
    } else if (c === 0x7d || c === 0x5d) {
      if (depth > 0) depth--;
    }
  }
  return { depth: deepest, members: most };
}

/**
 * Deepest `[`/`{` nesting of a JSON text ({@link jsonShape} without a members limit).
 * @returns the depth reached, at most `limit + 1`.
 */
export function jsonDepth(text: string, limit: number = MAX_JSON_DEPTH): number {
  return jsonShape(text, limit, Infinity).depth;
}

/**
 * Refuses, before it is parsed, a JSON body nested deeper than {@link MAX_JSON_DEPTH} or with an object of more than
 * {@link MAX_JSON_MEMBERS} members (400 in every dialect, raised by the body parser before any validation).
 * @throws InvalidRequestError `request body is nested too deeply: more than 512 levels of arrays and objects`, or
 *   `request body has an object with more than 10000 members`.
 */
export function checkJsonShape(text: string): void {
  const shape = jsonShape(text);
  if (shape.depth > MAX_JSON_DEPTH) {
    throw new InvalidRequestError(
      `request body is nested too deeply: more than ${MAX_JSON_DEPTH} levels of arrays and objects`,
    );
  }
  if (shape.members > MAX_JSON_MEMBERS) {
    throw new InvalidRequestError(`request body has an object with more than ${MAX_JSON_MEMBERS} members`);
  }
}

/**
 * Parsed bodies whose text {@link checkJsonShape} already checked (the daemon's own body parser marks them), so the
 * validation pipe does not walk them a second time.
 */
const SHAPE_CHECKED = new WeakSet<object>();

/** Marks a value parsed from a text that passed {@link checkJsonShape} (a no-op for non-objects). */
export function markShapeChecked(value: unknown): void {
  if (typeof value === 'object' && value !== null) SHAPE_CHECKED.add(value);
}

/**
 * Refuses a JSON body nested deeper than {@link MAX_JSON_DEPTH} (400 in every dialect, raised by the body parser
 * before any validation).
 * @throws InvalidRequestError `request body is nested too deeply: more than 512 levels of arrays and objects`.
 */
export function checkJsonDepth(text: string, limit: number = MAX_JSON_DEPTH): void {
  if (jsonDepth(text, limit) > limit) {
    throw new InvalidRequestError(`request body is nested too deeply: more than ${limit} levels of arrays and objects`);
  }
}

/**
 * Deepest nesting of arrays and objects of an already parsed value (iterative: no recursion whatever the depth),
 * stopping as soon as `limit` is exceeded. For bodies parsed by someone else's parser (a host application's), where
 * {@link checkJsonDepth} could not see the text.
 * @returns the depth reached, at most `limit + 1`.
 */
export function valueDepth(value: unknown, limit: number = MAX_JSON_DEPTH): number {
  let deepest = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    const level = depth + 1;
    if (level > deepest) {
      deepest = level;
      if (deepest > limit) return deepest;
    }
    const children = Array.isArray(current) ? current : Object.values(current);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) stack.push({ value: child, depth: level });
    }
  }
  return deepest;
}

/**
 * {@link checkJsonDepth} for a parsed value; a value marked by {@link markShapeChecked} passes without a walk.
 * @throws InvalidRequestError `request body is nested too deeply: more than 512 levels of arrays and objects`.
 */
export function checkValueDepth(value: unknown, limit: number = MAX_JSON_DEPTH): void {
  if (limit >= MAX_JSON_DEPTH && typeof value === 'object' && value !== null && SHAPE_CHECKED.has(value)) return;
  if (valueDepth(value, limit) > limit) {
    throw new InvalidRequestError(`request body is nested too deeply: more than ${limit} levels of arrays and objects`);
  }
}
