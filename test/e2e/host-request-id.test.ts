import { Controller, Get, Injectable, Module } from '@nestjs/common';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GenerationInfo, LlamadModule, NATIVE_BINDING, REQUEST_HOOKS, RequestHooks } from '../../src';
import { FakeBinding } from '../utils/fake-binding';
import { listenHost } from '../utils/host';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';

// One request id in a host application (issue 24 §5): llamad uses the id the host's Fastify assigned (its genReqId)
// in its response header and request hooks, and leaves the host's own routes alone.

@Controller('host')
class HostController {
  @Get('hello')
  hello(): { hello: string } {
    return { hello: 'world' };
  }
}

@Injectable()
class SeenIds implements RequestHooks {
  readonly started: GenerationInfo[] = [];
  onGenerationStart(info: GenerationInfo): void {
    this.started.push(info);
  }
}

describe("one request id in a host: the host's Fastify id", () => {
  let app: NestFastifyApplication;
  let base: string;
  let dir: string;
  let counter = 0;
  const hooks = new SeenIds();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-host-reqid-'));
    @Module({
      controllers: [HostController],
      imports: [
        LlamadModule.forRoot({
          config: { modelsDir: join(dir, 'models'), logging: false, contextLength: 512 },
          prefix: '/llm',
          providers: [
            { provide: NATIVE_BINDING, useValue: () => new FakeBinding() },
            { provide: REQUEST_HOOKS, useValue: hooks },
          ],
        }),
      ],
    })
    class HostModule {}
    const adapter = new FastifyAdapter({
      genReqId: (req: { method?: string }) => `host-${++counter}-${String(req.method)}`,
    });
    ({ app, base } = await listenHost(HostModule, adapter));
  });

  after(async () => {
    await app?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("echoes the host's id on llamad's routes, whatever x-request-id the client sent", async () => {
    const res = await fetch(`${base}/llm/api/version`, { headers: { 'x-request-id': 'client-1' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('x-request-id') ?? '', /^host-\d+-GET$/);
  });

  it('hands the same id to the request hooks of a generation', async () => {
    const gguf = join(dir, 'fake.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
    const created = await postJson(`${base}/llm/api/create`, { model: 'fake', from: gguf, stream: false });
    assert.equal(created.status, 200, await created.clone().text());
    const res = await postJson(`${base}/llm/api/chat`, {
      model: 'fake',
      messages: [{ role: 'user', content: 'hi' }],
      stream: false,
    });
    assert.equal(res.status, 200, await res.clone().text());
    const id = res.headers.get('x-request-id');
    assert.match(id ?? '', /^host-\d+-POST$/);
    assert.equal(hooks.started.at(-1)?.requestId, id);
  });

  it("does not touch the host's own routes (no x-request-id header of llamad's)", async () => {
    const res = await fetch(`${base}/host/hello`, { headers: { 'x-request-id': 'client-2' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-request-id'), null);
    assert.deepEqual(await res.json(), { hello: 'world' });
  });
});

// The daemon's own Fastify: request.id is the client's sane x-request-id (what Fastify logs and llamad echoes).
describe('one request id in the daemon', () => {
  it('makes Fastify’s request.id the client’s x-request-id, or a UUID for an odd one', async () => {
    const { fastifyRequestIdOptions } = await import('../../src/observability');
    const { genReqId } = fastifyRequestIdOptions();
    const req = (id: string) => ({ headers: { 'x-request-id': id } }) as unknown as FastifyRequest['raw'];
    assert.equal(genReqId(req('trace-42')), 'trace-42');
    assert.match(genReqId(req('bad id with spaces')), /^[0-9a-f-]{36}$/);
  });
});
