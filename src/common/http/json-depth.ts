import { InvalidRequestError } from '../errors';

/**
 * Deepest nesting of arrays and objects a request body may have (docs/security.md). Real requests stay far below it
 * (a tool's JSON Schema is a few dozen levels); the validation pipe and class-transformer recurse per level and
 * overflow the stack near 5,000, so deeper bodies are refused before they reach them. Go's encoding/json (Ollama)
 * stops at 10,000.
 */
export const MAX_JSON_DEPTH = 512;

/**
 * Deepest `[`/`{` nesting of a JSON text, counted by one linear scan that skips string contents (escapes included)
 * and stops as soon as `limit` is exceeded. Not a validator: malformed text is left to JSON.parse.
 * @returns the depth reached, at most `limit + 1`.
 */
export function jsonDepth(text: string, limit: number = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        i++;
      } // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return deepest;
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
 * {@link checkJsonDepth} for a parsed value.
 * @throws InvalidRequestError `request body is nested too deeply: more than 512 levels of arrays and objects`.
 */
export function checkValueDepth(value: unknown, limit: number = MAX_JSON_DEPTH): void {
  if (valueDepth(value, limit) > limit) {
    throw new InvalidRequestError(`request body is nested too deeply: more than ${limit} levels of arrays and objects`);
  }
}
