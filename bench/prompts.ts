/**
 * Deterministic prompt text for `npm run bench`: pseudo-words from a seeded PRNG, cut to an exact token count with
 * llama-server's /tokenize and /detokenize (the same GGUF and tokenizer the daemon uses).
 */
import { postJson } from './clients';
import { mulberry32 } from '../test/utils/prng';

const SYLLABLES = [
  'ka', 'lo', 'mi', 'ten', 'ra', 'vo', 'sel', 'din', 'pa', 'gor', 'um', 'tes', 'bri', 'na', 'col', 'fe', 'shan', 'ip',
  'do', 'ver', 'lu', 'mar', 'sto', 'en', 'qui', 'har', 'zo', 'pel', 'at', 'wen',
]; // prettier-ignore

/** `words` pseudo-words (1–3 syllables) separated by spaces, with a sentence break every 12 words; same seed, same text. */
export function words(seed: number, count: number): string {
  const rand = mulberry32(seed * 7919 + 17);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = 1 + Math.floor(rand() * 3);
    let w = '';
    for (let s = 0; s < n; s++) w += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
    out.push(i % 12 === 11 ? `${w}.` : w);
  }
  return out.join(' ');
}

/**
 * Text that tokenizes to exactly `tokens` tokens without special tokens (the server adds BOS), made from seed.
 * @param base llama-server's base URL (its /tokenize and /detokenize)
 * @throws Error when the count cannot be matched (a tokenizer that does not round-trip).
 */
export async function textOfTokens(base: string, seed: number, tokens: number): Promise<string> {
  const long = words(seed, tokens * 2);
  const tok = (await postJson(`${base}/tokenize`, { content: long, add_special: false })).json as { tokens: number[] };
  let take = tokens;
  for (let attempt = 0; attempt < 8; attempt++) {
    const text = (
      (await postJson(`${base}/detokenize`, { tokens: tok.tokens.slice(0, take) })).json as { content: string }
    ).content.trim();
    const again = (await postJson(`${base}/tokenize`, { content: text, add_special: false })).json as {
      tokens: number[];
    };
    if (again.tokens.length === tokens) return text;
    take += tokens - again.tokens.length;
  }
  throw new Error(`cannot make a prompt of exactly ${tokens} tokens`);
}
