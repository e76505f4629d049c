import { Busboy } from '@fastify/busboy';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { InvalidRequestError } from '../../../common/errors';

/** Bounds of one multipart upload (bytes and counts). */
export interface MultipartLimits {
  /** Most bytes of the file part (OpenAI's and Ollama's 25 MB: 26,214,400). Beyond: 413. */
  fileBytes: number;
  /** Most non-file fields. Beyond: 400. */
  fields: number;
  /** Most bytes of one field's value. Beyond: 400. */
  fieldBytes: number;
  /** Most file parts, the accepted one included (others are read and thrown away, counted in `bodyBytes`). */
  files: number;
  /** Most bytes of the whole body (parts' headers and boundaries included). Beyond: 413. */
  bodyBytes: number;
}

/** 25 MB, the upload limit of OpenAI's audio API and of Ollama's transcription route (reference §12.7). */
export const AUDIO_FILE_LIMIT_BYTES = 25 * 1024 * 1024;

/**
 * The limits of the audio routes: one file of at most {@link AUDIO_FILE_LIMIT_BYTES}, 64 fields of at most 64 KiB
 * (a `prompt` is at most a few hundred tokens), at most 4 file parts, and a body at most 1 MiB over the file limit
 * (64 fields × 64 KiB would pass that: the body limit is the one that holds).
 */
export const AUDIO_UPLOAD_LIMITS: MultipartLimits = {
  fileBytes: AUDIO_FILE_LIMIT_BYTES,
  fields: 64,
  fieldBytes: 64 * 1024,
  files: 4,
  bodyBytes: AUDIO_FILE_LIMIT_BYTES + 1024 * 1024,
};

/** The uploaded file, held in memory (never written to disk). */
export interface UploadedFile {
  /** The part's `filename` as sent ('' when it had none). */
  filename: string;
  /** The part's Content-Type as sent. */
  mimeType: string;
  bytes: Buffer;
}

/** A parsed multipart/form-data body. */
export interface MultipartForm {
  /** Every non-file field by name, values in order (repeated parts such as `include[]` give several). */
  fields: Map<string, string[]>;
  /** The file part named `fileField`, when there was one. */
  file?: UploadedFile;
}

/** An upload over a size limit: 413, as the JSON body limit answers (Fastify-style `statusCode` error). */
export function uploadTooLarge(message: string): Error {
  return Object.assign(new Error(message), { statusCode: 413 });
}

/** Go's http.ErrNotMultipart text (what Ollama's FormFile answers for a body that is not multipart). */
export const NOT_MULTIPART_MESSAGE = "request Content-Type isn't multipart/form-data";

/**
 * Reads a multipart/form-data body from `body` (the unread request stream), streaming, within `limits`: the file part
 * named `fileField` is collected in memory (at most `limits.fileBytes`), other file parts are read and thrown away,
 * fields are collected by name. Reading stops at the first violation (the caller answers without reading the rest).
 * @param headers the request's headers (`content-type` with the boundary; `content-length` checked first).
 * @throws InvalidRequestError (400) {@link NOT_MULTIPART_MESSAGE}, `malformed multipart body: …`,
 *   `too many form fields (the limit is N)`, `form field "x" is too long (the limit is N bytes)`,
 *   `too many files (the limit is N)`, `only one "file" may be sent`;
 *   a 413 {@link uploadTooLarge} error `file is too large (the limit is N bytes)` or
 *   `Request body is too large` (the whole body, by Content-Length or as read).
 */
export function readMultipartForm(
  body: Readable,
  headers: IncomingHttpHeaders,
  limits: MultipartLimits,
  fileField = 'file',
): Promise<MultipartForm> {
  const contentType = headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*(?:;|$)/i.test(contentType)) {
    return Promise.reject(new InvalidRequestError(NOT_MULTIPART_MESSAGE));
  }
  const declared = Number(headers['content-length']);
  if (!Number.isNaN(declared) && declared > limits.bodyBytes) {
    return Promise.reject(uploadTooLarge('Request body is too large'));
  }
  return new Promise<MultipartForm>((resolve, reject) => {
    const fields = new Map<string, string[]>();
    let file: UploadedFile | undefined;
    let settled = false;
    let received = 0;
    let parser: Busboy;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      body.unpipe(parser);
      body.removeListener('data', count);
      reject(err);
    };
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limits.bodyBytes) fail(uploadTooLarge('Request body is too large'));
    };
    try {
      parser = new Busboy({
        headers: { ...headers, 'content-type': contentType },
        limits: {
          fields: limits.fields,
          fieldSize: limits.fieldBytes,
          fileSize: limits.fileBytes,
          files: limits.files,
          parts: limits.fields + limits.files,
        },
      });
    } catch (err) {
      reject(new InvalidRequestError(`malformed multipart body: ${(err as Error).message}`));
      return;
    }
    parser.on('field', (name, value, _nameTruncated, valueTruncated) => {
      if (valueTruncated) {
        fail(
          new InvalidRequestError(`form field "${name}" is too long (the limit is ${limits.fieldBytes} bytes)`, name),
        );
        return;
      }
      const values = fields.get(name);
      if (values) values.push(value);
      else fields.set(name, [value]);
    });
    const malformed = (err: unknown) =>
      fail(new InvalidRequestError(`malformed multipart body: ${err instanceof Error ? err.message : String(err)}`));
    parser.on('file', (name, stream, filename, _encoding, mimeType) => {
      // A part cut short (the body ended inside it) errors its stream as well as the parser.
      stream.on('error', malformed);
      if (name !== fileField) {
        stream.resume();
        return;
      }
      if (file) {
        stream.resume();
        fail(new InvalidRequestError(`only one "${fileField}" may be sent`, fileField));
        return;
      }
      const part: UploadedFile = { filename: filename ?? '', mimeType: mimeType ?? '', bytes: Buffer.alloc(0) };
      file = part;
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => fail(uploadTooLarge(`file is too large (the limit is ${limits.fileBytes} bytes)`)));
      stream.on('end', () => {
        part.bytes = Buffer.concat(chunks);
      });
    });
    parser.on('fieldsLimit', () =>
      fail(new InvalidRequestError(`too many form fields (the limit is ${limits.fields})`)),
    );
    parser.on('filesLimit', () => fail(new InvalidRequestError(`too many files (the limit is ${limits.files})`)));
    parser.on('partsLimit', () =>
      fail(new InvalidRequestError(`too many form parts (the limit is ${limits.fields + limits.files})`)),
    );
    parser.on('error', malformed);
    parser.on('finish', () => {
      if (settled) return;
      settled = true;
      resolve(file ? { fields, file } : { fields });
    });
    body.on('data', count);
    body.on('error', (err: Error) => fail(err));
    body.pipe(parser);
  });
}
