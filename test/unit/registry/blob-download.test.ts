import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RegistryError } from '../../../src/common/errors';
import { downloadBlob, TransferTuning } from '../../../src/registry/blob-download';
import type { RegistryFiles } from '../../../src/registry/registry-files';
import { RegistrySession } from '../../../src/registry/registry-http.client';
import { listenLoopback, rejection } from '../../utils/loopback';

const D = `sha256:${'ab'.repeat(32)}`;

describe('blob download failures', () => {
  let dir: string;
  const tuning: TransferTuning = {
    partSize: 1 << 20,
    maxParallelParts: 2,
    uploadChunkSize: 1 << 20,
    attempts: 3,
    retryDelayMs: 1,
  };
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-blob-'));
    await mkdir(join(dir, 'blobs'));
    await mkdir(join(dir, 'partial'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** The part of RegistryFiles downloadBlob uses, on a temporary directory. */
  const files = () =>
    ({
      ensurePartialDir: () => Promise.resolve(),
      partPath: (digest: string, index: number) => join(dir, 'partial', `${digest.replace(':', '-')}-partial-${index}`),
      joinedPath: (digest: string) => join(dir, 'partial', `${digest.replace(':', '-')}-partial`),
      commitBlob: (from: string, digest: string) => rename(from, join(dir, 'blobs', digest.replace(':', '-'))),
    }) as unknown as RegistryFiles;

  /** downloadBlob of `digest` (`size` bytes) from `url` into the temporary directory, with the test's tuning. */
  const download = (url: string, digest: string, size: number) =>
    downloadBlob(
      files(),
      {
        session: new RegistrySession(undefined),
        url,
        digest,
        size,
        signal: new AbortController().signal,
        onProgress: () => undefined,
      },
      tuning,
    );

  it('a body cut mid-way on every attempt: max retries exceeded: pull layer …: EOF', async () => {
    const body = Buffer.alloc(4096, 7);
    const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    let requests = 0;
    const srv = await listenLoopback(
      createServer((_req, res) => {
        requests++;
        res.writeHead(200, { 'content-length': String(body.length) });
        res.write(body.subarray(0, 100));
        setTimeout(() => res.socket?.destroy(), 10);
      }),
    );
    try {
      const url = `http://127.0.0.1:${srv.port}/v2/ns/m/blobs/${digest}`;
      const err = await rejection(() => download(url, digest, body.length));
      assert.ok(err instanceof RegistryError, String(err));
      assert.equal(requests, 3);
      assert.equal(
        err.message,
        `max retries exceeded: pull layer ${digest.slice(7, 19)}: Get "${url}": read tcp 127.0.0.1:${srv.port}: EOF (connection closed by the server)`,
      );
    } finally {
      await srv.close();
    }
  });

  it('a registry 500 with HTML on every attempt: max retries exceeded: … 500 Internal Server Error', async () => {
    const srv = await listenLoopback(
      createServer((_req, res) => res.writeHead(500, { 'content-type': 'text/html' }).end('<html>down</html>')),
    );
    try {
      const url = `http://127.0.0.1:${srv.port}/v2/ns/m/blobs/${D}`;
      const err = await rejection(() => download(url, D, 10));
      assert.ok(err instanceof RegistryError);
      assert.equal(err.upstreamStatus, 500);
      assert.equal(err.message, 'max retries exceeded: pull layer abababababab: 500 Internal Server Error');
    } finally {
      await srv.close();
    }
  });

  it('404: file does not exist (not retried)', async () => {
    let requests = 0;
    const srv = await listenLoopback(
      createServer((_req, res) => (requests++, res.writeHead(404).end('{"errors":[]}'))),
    );
    try {
      const url = `http://127.0.0.1:${srv.port}/v2/ns/m/blobs/${D}`;
      const err = await rejection(() => download(url, D, 10));
      assert.equal(err.message, 'file does not exist');
      assert.equal(requests, 1);
      assert.deepEqual(
        await readFile(join(dir, 'partial', `${D.replace(':', '-')}-partial-0`)).catch(() => null),
        null,
      );
    } finally {
      await srv.close();
    }
  });
});
