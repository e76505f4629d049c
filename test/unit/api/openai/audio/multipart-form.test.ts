import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../../src/common/errors';
import {
  AUDIO_UPLOAD_LIMITS,
  MultipartLimits,
  NOT_MULTIPART_MESSAGE,
  readMultipartForm,
} from '../../../../../src/api/openai/audio/multipart-form';

/** A real multipart body (undici's FormData encoder, as fetch sends it): its bytes and headers. */
async function encode(form: FormData): Promise<{ bytes: Buffer; headers: Record<string, string> }> {
  const response = new Response(form);
  const bytes = Buffer.from(await response.arrayBuffer());
  return {
    bytes,
    headers: { 'content-type': response.headers.get('content-type') ?? '', 'content-length': String(bytes.length) },
  };
}

/** The body as a stream of small chunks (as a socket delivers it). */
function chunked(bytes: Buffer, size = 1000): Readable {
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return Readable.from(parts);
}

const SMALL: MultipartLimits = { fileBytes: 1000, fields: 4, fieldBytes: 50, files: 2, bodyBytes: 4000 };

async function parse(form: FormData, limits = SMALL, dropLength = false) {
  const { bytes, headers } = await encode(form);
  if (dropLength) delete headers['content-length'];
  return readMultipartForm(chunked(bytes, 97), headers, limits);
}

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

describe('readMultipartForm (audio uploads)', () => {
  it('collects the file in memory and the fields by name, repeated `[]` parts in order', async () => {
    const form = new FormData();
    form.append('model', 'tiny-audio');
    form.append('file', new Blob([Buffer.from('RIFF....WAVE')], { type: 'audio/wav' }), 'a.wav');
    form.append('include[]', 'logprobs');
    form.append('include[]', 'other');
    const parsed = await parse(form);
    assert.deepEqual(parsed.fields.get('model'), ['tiny-audio']);
    assert.deepEqual(parsed.fields.get('include[]'), ['logprobs', 'other']);
    assert.equal(parsed.file?.filename, 'a.wav');
    assert.equal(parsed.file?.mimeType, 'audio/wav');
    assert.equal(parsed.file?.bytes.toString('latin1'), 'RIFF....WAVE');
  });

  it('keeps a file part with binary bytes exactly (every byte value, across chunk borders)', async () => {
    const bytes = Buffer.alloc(900);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7) % 256;
    const form = new FormData();
    form.append('file', new Blob([bytes]), 'x.bin');
    const parsed = await parse(form);
    assert.ok(parsed.file?.bytes.equals(bytes));
  });

  it('has no file when the form has none, or only a plain field named file', async () => {
    const form = new FormData();
    form.append('model', 'm');
    form.append('file', 'not a file part');
    const parsed = await parse(form);
    assert.equal(parsed.file, undefined);
    assert.deepEqual(parsed.fields.get('file'), ['not a file part']);
  });

  it('reads and throws away file parts of other names', async () => {
    const form = new FormData();
    form.append('other', new Blob([Buffer.alloc(500, 1)]), 'o.bin');
    form.append('file', new Blob([Buffer.from('abc')]), 'a.wav');
    const parsed = await parse(form);
    assert.equal(parsed.file?.bytes.toString(), 'abc');
  });

  it('refuses a file over the limit with 413, and a body over its limit (declared or read) with 413', async () => {
    const big = new FormData();
    big.append('file', new Blob([Buffer.alloc(1001)]), 'a.wav');
    await assert.rejects(
      parse(big),
      (err) => statusOf(err) === 413 && /file is too large \(the limit is 1000 bytes\)/.test((err as Error).message),
    );

    const huge = new FormData();
    huge.append('other', new Blob([Buffer.alloc(5000)]), 'o.bin');
    await assert.rejects(
      parse(huge),
      (err) => statusOf(err) === 413 && (err as Error).message === 'Request body is too large',
    );
    // Without Content-Length (chunked): counted as read.
    await assert.rejects(parse(huge, SMALL, true), (err) => statusOf(err) === 413);
  });

  it('refuses too many fields, an over-long field, a second file and too many files with 400', async () => {
    const many = new FormData();
    for (let i = 0; i < 5; i++) many.append(`f${i}`, 'v');
    await assert.rejects(
      parse(many),
      (err) => err instanceof InvalidRequestError && /too many form fields \(the limit is 4\)/.test(err.message),
    );

    const long = new FormData();
    long.append('prompt', 'x'.repeat(51));
    await assert.rejects(
      parse(long),
      (err) =>
        err instanceof InvalidRequestError && err.message === 'form field "prompt" is too long (the limit is 50 bytes)',
    );

    const two = new FormData();
    two.append('file', new Blob(['a']), 'a.wav');
    two.append('file', new Blob(['b']), 'b.wav');
    await assert.rejects(
      parse(two),
      (err) => err instanceof InvalidRequestError && err.message === 'only one "file" may be sent',
    );

    const files = new FormData();
    for (let i = 0; i < 3; i++) files.append(`o${i}`, new Blob(['a']), 'a.bin');
    await assert.rejects(
      parse(files),
      (err) => err instanceof InvalidRequestError && /too many (files|form parts)/.test(err.message),
    );
  });

  it('refuses a body that is not multipart/form-data, or a truncated one, with 400', async () => {
    await assert.rejects(
      readMultipartForm(Readable.from([Buffer.from('{"model":"m"}')]), { 'content-type': 'application/json' }, SMALL),
      (err) => err instanceof InvalidRequestError && err.message === NOT_MULTIPART_MESSAGE,
    );
    await assert.rejects(
      readMultipartForm(Readable.from([Buffer.from('x')]), { 'content-type': 'multipart/form-data' }, SMALL),
      (err) => err instanceof InvalidRequestError && /^malformed multipart body: .*[Bb]oundary/.test(err.message),
    );
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(300)]), 'a.wav');
    const { bytes, headers } = await encode(form);
    delete headers['content-length'];
    await assert.rejects(
      readMultipartForm(chunked(bytes.subarray(0, 200)), headers, SMALL),
      (err) => err instanceof InvalidRequestError && /^malformed multipart body: /.test(err.message),
    );
  });

  it('has the audio routes’ limits: one 25 MB file, bounded fields', () => {
    assert.equal(AUDIO_UPLOAD_LIMITS.fileBytes, 26_214_400);
    assert.ok(AUDIO_UPLOAD_LIMITS.bodyBytes > AUDIO_UPLOAD_LIMITS.fileBytes);
    assert.ok(AUDIO_UPLOAD_LIMITS.fields <= 100 && AUDIO_UPLOAD_LIMITS.fieldBytes <= 1024 * 1024);
  });
});
