import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkJsonShape, markShapeChecked } from './json-depth';
import { InvalidRequestError } from '../errors';

/** Routes whose body is a raw byte stream handed to the handler unparsed and without a size limit (§3.10). */
export const RAW_BODY_ROUTE = /^\/api\/blobs\/[^/?]*\/?(?:\?.*)?$/;

/**
 * The audio upload routes (`POST /v1/audio/transcriptions`, `POST /v1/audio/translations`): multipart/form-data,
 * handed to the handler as the unread request stream, which parses it with its own limits
 * (src/api/openai/audio/multipart-form.ts).
 */
export const AUDIO_UPLOAD_ROUTE = /^\/v1\/audio\/(?:transcriptions|translations)\/?(?:\?.*)?$/;

/**
 * Management routes (create, pull, push, copy, delete): small JSON bodies, so they get their own, smaller limit
 * (DaemonConfig.managementBodyLimit). The blob upload is not one of them: it streams.
 */
export const MANAGEMENT_ROUTE = /^\/api\/(?:create|pull|push|copy|delete)\/?(?:\?.*)?$/;

/** Body limits of {@link installJsonBodyParser}, bytes. */
export interface BodyLimits {
  /** Every JSON body (images arrive base64-encoded inside JSON). */
  bodyLimit: number;
  /** Bodies of {@link MANAGEMENT_ROUTE}; default `bodyLimit`. */
  managementBodyLimit?: number;
}

/**
 * Installs the daemon's body parser on Fastify: every request body, whatever its Content-Type (curl -d sends
 * form-encoded, ollama-js sends JSON), is parsed as JSON, as Ollama's handlers do (reference/ollama-api.md §1.1).
 * An empty body parses to `undefined` (the validation pipe answers `missing request body`); malformed JSON fails
 * with a 400 whose message is the parser's ("unexpected end of JSON input" style); a body nested deeper than
 * MAX_JSON_DEPTH or with an object of more than MAX_JSON_MEMBERS members (src/common/http/json-depth.ts) fails with a
 * 400 before it is parsed.
 * Exception: `POST /api/blobs/:digest` ({@link RAW_BODY_ROUTE}) gets the unread request stream as its body (any
 * content type, no size limit): the handler streams it to disk. So do the audio uploads ({@link AUDIO_UPLOAD_ROUTE}):
 * their handler parses the multipart stream with its own limits.
 * Management routes ({@link MANAGEMENT_ROUTE}) have their own, smaller limit.
 * @param limits maximum body sizes in bytes (413 `Request body is too large` beyond them), or one limit for all.
 */
export function installJsonBodyParser(fastify: FastifyInstance, limits: number | BodyLimits): void {
  const { bodyLimit, managementBodyLimit = bodyLimit } = typeof limits === 'number' ? { bodyLimit: limits } : limits;
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser(
    '*',
    (req: FastifyRequest, payload: NodeJS.ReadableStream, done: (err: Error | null, body?: unknown) => void) => {
      if (req.method === 'POST' && (RAW_BODY_ROUTE.test(req.url) || AUDIO_UPLOAD_ROUTE.test(req.url))) {
        done(null, payload);
        return;
      }
      const limit = MANAGEMENT_ROUTE.test(req.url) ? Math.min(managementBodyLimit, bodyLimit) : bodyLimit;
      readLimited(req, payload, limit).then(
        (text) => {
          if (text.trim() === '') {
            done(null, undefined);
            return;
          }
          try {
            checkJsonShape(text);
          } catch (err) {
            done(err as Error);
            return;
          }
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch (err) {
            done(new InvalidRequestError(describeJsonError(text, err as Error)));
            return;
          }
          markShapeChecked(body);
          done(null, body);
        },
        (err: Error) => done(err),
      );
    },
  );
}

/** Fastify's own errors for an oversized or short body (the filter keeps their `statusCode`). */
function bodyError(message: string, statusCode: number): Error {
  return Object.assign(new Error(message), { statusCode });
}

/** Reads a whole body as UTF-8, failing with 413 beyond `limit` bytes (checked on Content-Length first). */
function readLimited(req: FastifyRequest, payload: NodeJS.ReadableStream, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (!Number.isNaN(declared) && declared > limit) {
      reject(bodyError('Request body is too large', 413));
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    let failed = false;
    const onData = (chunk: Buffer | string) => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      received += buf.length;
      if (received > limit) {
        failed = true;
        payload.removeListener('data', onData);
        reject(bodyError('Request body is too large', 413));
        return;
      }
      chunks.push(buf);
    };
    payload.on('data', onData);
    payload.on('error', (err: Error) => {
      if (!failed) reject(err);
    });
    payload.on('end', () => {
      if (failed) return;
      if (!Number.isNaN(declared) && declared !== received) {
        reject(bodyError('Request body size did not match Content-Length', 400));
        return;
      }
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
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
