/**
 * Linear-time parsing of request header values (issue 32): no regular expression reads a client's header, and every
 * value a check looks at has a length cap, so a header of any size (up to node's 16 KiB header limit) costs at most
 * one scan. A value beyond its cap is treated as absent or invalid, never parsed.
 */

/**
 * Longest `Authorization` value read as credentials, characters (bytes for ASCII). API keys are short; a signed
 * token (JWT) a host's authorizer reads itself stays well below this. Longer: no key presented (401).
 */
export const MAX_AUTHORIZATION_LENGTH = 4096;

/** Longest `x-api-key` value read as a key, characters. Longer: no key presented (401). */
export const MAX_API_KEY_LENGTH = 4096;

/** Longest `Origin` value compared with the allowed origins, characters; a longer one is not allowed (403). */
export const MAX_ORIGIN_LENGTH = 2048;

/** Longest `Host` value judged by the DNS-rebinding guard, characters; a longer one is not allowed (403). */
export const MAX_HOST_LENGTH = 1024;

/** Whether a one-character string is whitespace as JavaScript's `String.prototype.trim` (and `\s`) sees it. */
function isSpace(ch: string): boolean {
  return ch !== '' && ch.trim() === '';
}

/**
 * The credentials of an `Authorization: Bearer <token>` value: the scheme compared case-insensitively (RFC 7235), at
 * least one space after it, the token with surrounding whitespace removed. One pass, no regular expression.
 * @param value the header value (one header; node joins none for `authorization`)
 * @param maxLength longest value read, characters; default {@link MAX_AUTHORIZATION_LENGTH}
 * @returns the token, or undefined when the value is absent, not Bearer, has an empty token or is longer than
 *   `maxLength`
 */
export function bearerToken(value: string | undefined, maxLength = MAX_AUTHORIZATION_LENGTH): string | undefined {
  if (value === undefined || value.length > maxLength) return undefined;
  const trimmed = value.trim();
  if (trimmed.length < 8 || trimmed.slice(0, 6).toLowerCase() !== 'bearer' || !isSpace(trimmed[6])) return undefined;
  const token = trimmed.slice(7).trim();
  return token === '' ? undefined : token;
}

/**
 * A glob whose `*` stands for any run of characters (OLLAMA_ORIGINS entries), matched without backtracking: the
 * literal pieces are found left to right with `indexOf` (the leftmost match of each piece is always a valid choice
 * when `*` is the only wildcard), so the cost is at most (input length × pattern length), whatever the input.
 */
export class WildcardPattern {
  private readonly pieces: string[];

  /** @param pattern the glob, already lower-cased if matching is to be case-insensitive */
  constructor(pattern: string) {
    this.pieces = pattern.split('*');
  }

  /** Whether the whole of `text` matches. */
  matches(text: string): boolean {
    const pieces = this.pieces;
    const first = pieces[0];
    const last = pieces[pieces.length - 1];
    if (pieces.length === 1) return text === first;
    if (text.length < first.length + last.length) return false;
    if (!text.startsWith(first) || !text.endsWith(last)) return false;
    let at = first.length;
    const end = text.length - last.length;
    for (let i = 1; i < pieces.length - 1; i++) {
      const piece = pieces[i];
      if (piece === '') continue;
      const found = text.indexOf(piece, at);
      if (found < 0 || found + piece.length > end) return false;
      at = found + piece.length;
    }
    return true;
  }
}
