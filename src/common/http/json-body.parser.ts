import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidRequestError } from '../errors';

/**
 * Installs the daemon's body parser on Fastify: every request body, whatever its Content-Type (curl -d sends
 * form-encoded, ollama-js sends JSON), is parsed as JSON, as Ollama's handlers do (reference/ollama-api.md §1.1).
 * An empty body parses to `undefined` (the validation pipe answers `missing request body`); malformed JSON fails
 * with a 400 whose message is the parser's ("unexpected end of JSON input" style).
 * @param bodyLimit maximum body size in bytes (Fastify answers 413 beyond it).
 */
export function installJsonBodyParser(fastify: FastifyInstance, bodyLimit: number): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser(
    '*',
    { parseAs: 'string', bodyLimit },
    (_req: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') {
        done(null, undefined);
        return;
      }
      try {
        done(null, JSON.parse(text));
      } catch (err) {
        done(new InvalidRequestError(describeJsonError(text, err as Error)));
      }
    },
  );
}

/**
 * A JSON syntax error in Go's wording where it is easy to match (reference/ollama-api.md §1.1):
 * `unexpected EOF` for a truncated document (the parser failed at its end), `invalid character 'x' looking for beginning of value` for a bad
 * first character; otherwise the JS parser's message.
 */
export function describeJsonError(text: string, err: Error): string {
  const trimmed = text.trimStart();
  const first = trimmed[0];
  if (first !== undefined && !'{["-0123456789tfn'.includes(first)) {
    return `invalid character '${first}' looking for beginning of value`;
  }
  if (/end of (JSON )?input|Unterminated/i.test(err.message)) return 'unexpected EOF';
  const position = /at position (\d+)/.exec(err.message);
  if (position && Number(position[1]) >= text.trimEnd().length) return 'unexpected EOF';
  return err.message;
}
