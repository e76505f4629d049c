import {
  ArgumentsHost,
  Body,
  Catch,
  Controller,
  ExceptionFilter,
  Get,
  Inject,
  Injectable,
  Module,
  Optional,
  Post,
  ValidationPipe,
} from '@nestjs/common';
import { APP_FILTER, APP_PIPE, NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { IsString } from 'class-validator';
import type { FastifyReply } from 'fastify';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  AUTHORIZER,
  AuthorizationRequest,
  ChatResponseWire,
  DaemonConfig,
  GenerationEndInfo,
  LlamadModule,
  LlamadService,
  MODEL_STORE,
  ModelStore,
  ModelStoreRepository,
  NATIVE_BINDING,
  REQUEST_HOOKS,
  RequestAuthorizer,
  RequestHooks,
  TEMPLATE_RENDERER,
  TemplateRenderer,
  UnauthorizedError,
} from '../../src';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson, readNdjson } from '../utils/ndjson';

// LlamadModule inside a host NestJS application (in-process, FakeBinding): routes under the prefix, the host's own
// error format, validation and routes untouched, the extension tokens replaced, the facade streamed with `for await`.

/** The host's own error format. */
@Catch()
class HostFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const status = (exception as { getStatus?: () => number }).getStatus?.() ?? 500;
    void reply.status(status).send({ hostError: true, status });
  }
}

class EchoDto {
  @IsString() text!: string;
}

@Controller('host')
class HostController {
  constructor(@Optional() @Inject(DaemonConfig) private readonly config?: DaemonConfig) {}

  @Get('hello')
  hello(): { hello: string; seesDaemonConfig: boolean } {
    return { hello: 'world', seesDaemonConfig: this.config !== undefined };
  }

  @Post('echo')
  echo(@Body() body: EchoDto): EchoDto {
    return body;
  }
}

/** A module of the host that does not import LlamadModule: nothing of the library may be visible in it. */
@Module({ controllers: [HostController] })
class HostFeatureModule {}

class TenantAuthorizer implements RequestAuthorizer {
  readonly seen: AuthorizationRequest[] = [];
  authorize(request: AuthorizationRequest): Promise<void> {
    this.seen.push(request);
    if (request.headers['x-tenant'] !== 'acme') return Promise.reject(new UnauthorizedError());
    return Promise.resolve();
  }
}

@Injectable()
class Usage implements RequestHooks {
  readonly ended: GenerationEndInfo[] = [];
  onGenerationEnd(info: GenerationEndInfo): void {
    this.ended.push(info);
  }
}

describe('LlamadModule in a host application (FakeBinding)', () => {
  let app: NestFastifyApplication;
  let base: string;
  let dir: string;
  const binding = new FakeBinding();
  const tenant = { 'x-tenant': 'acme' };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-host-'));
    @Module({
      imports: [
        HostFeatureModule,
        LlamadModule.forRootAsync({
          useFactory: () => ({ config: { modelsDir: join(dir, 'models'), logging: false, contextLength: 512 } }),
          prefix: '/llm',
          providers: [
            { provide: NATIVE_BINDING, useValue: () => binding },
            { provide: AUTHORIZER, useClass: TenantAuthorizer },
            { provide: REQUEST_HOOKS, useClass: Usage },
          ],
        }),
      ],
      providers: [
        { provide: APP_FILTER, useClass: HostFilter },
        // Global pipes run on the module's routes too (Nest semantics): `forbidNonWhitelisted` would refuse the unknown
        // fields Ollama clients send (docs/library.md); `whitelist` alone keeps every field the DTOs declare.
        { provide: APP_PIPE, useValue: new ValidationPipe({ whitelist: true, transform: true }) },
      ],
    })
    class HostModule {}

    app = await NestFactory.create<NestFastifyApplication>(HostModule, new FastifyAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const gguf = join(dir, 'fake.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(
      `${base}/llm/api/create`,
      { model: 'fake', from: gguf, stream: false },
      { headers: { 'content-type': 'application/json', ...tenant } },
    );
    assert.equal(res.status, 200, await res.clone().text());
  });

  after(async () => {
    await app?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('mounts the routes under the prefix only', async () => {
    assert.deepEqual(await (await fetch(`${base}/llm/api/version`)).json(), { version: '0.33.0' });
    assert.equal(await (await fetch(`${base}/llm`)).text(), 'Ollama is running');
    const unprefixed = await fetch(`${base}/api/version`);
    assert.equal(unprefixed.status, 404);
    assert.deepEqual(await unprefixed.json(), { hostError: true, status: 404 }, 'the host renders its own 404s');
  });

  it('leaves the host routes, error format and validation alone', async () => {
    assert.deepEqual(await (await fetch(`${base}/host/hello`)).json(), { hello: 'world', seesDaemonConfig: false });
    const bad = await postJson(`${base}/host/echo`, { text: 5 });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { hostError: true, status: 400 });
  });

  it('renders its own errors in the dialect of the route, unknown fields ignored as Ollama does', async () => {
    const native = await postJson(
      `${base}/llm/api/chat`,
      { model: 'missing', extra: true },
      { headers: { 'content-type': 'application/json', ...tenant } },
    );
    assert.equal(native.status, 404);
    assert.deepEqual(await native.json(), { error: "model 'missing' not found" });
    const openai = await postJson(
      `${base}/llm/v1/chat/completions`,
      { model: 'missing', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'content-type': 'application/json', ...tenant } },
    );
    assert.equal(openai.status, 404);
    const body = (await openai.json()) as { error: { type: string } };
    assert.equal(typeof body.error.type, 'string');
  });

  it('asks the host authorizer, and refuses in each dialect', async () => {
    const native = await fetch(`${base}/llm/api/tags`);
    assert.equal(native.status, 401);
    assert.match(((await native.json()) as { error: string }).error, /^unauthorized/);
    const openai = await fetch(`${base}/llm/v1/models`);
    assert.equal(openai.status, 401);
    assert.equal(((await openai.json()) as { error: { type: string } }).error.type !== undefined, true);
    const anthropic = await postJson(`${base}/llm/v1/messages`, {});
    assert.equal(anthropic.status, 401);
    assert.equal(((await anthropic.json()) as { type: string }).type, 'error');
    const ok = await fetch(`${base}/llm/api/tags`, { headers: tenant });
    assert.equal(ok.status, 200);
  });

  it('judges Origin on its own paths only', async () => {
    const evil = { origin: 'https://evil.example' };
    assert.equal((await fetch(`${base}/llm/api/version`, { headers: evil })).status, 403);
    assert.equal((await fetch(`${base}/host/hello`, { headers: evil })).status, 200);
    const preflight = await fetch(`${base}/llm/api/chat`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://localhost:3000');
  });

  it('streams a chat through the facade with for await; breaking cancels it and frees the slot', async () => {
    binding.script = () => ({ pieces: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'], delayMs: 5 });
    const llm = app.get(LlamadService);
    const got: ChatResponseWire[] = [];
    for await (const chunk of llm.chat({ model: 'fake', messages: [{ role: 'user', content: 'hi' }] })) {
      got.push(chunk);
      if (got.length === 3) break;
    }
    assert.deepEqual(
      got.map((c) => c.message.content),
      ['a', 'b', 'c'],
    );
    for (let i = 0; i < 50 && binding.activeTasks() > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(binding.activeTasks(), 0);
    assert.ok(binding.cancelled.length >= 1);

    const whole = await llm.chat({ model: 'fake', messages: [{ role: 'user', content: 'hi' }] }).response();
    assert.equal(whole.message.content, 'abcdefgh');
    assert.equal(whole.done, true);
  });

  it('validates plain requests given to the facade as the HTTP API does', () => {
    const llm = app.get(LlamadService);
    assert.throws(
      () => llm.chat({ model: 'fake', messages: 'nope' } as never),
      (err: Error) => /cannot unmarshal/.test(err.message),
    );
  });

  it('calls the host REQUEST_HOOKS with token counts', async () => {
    binding.script = () => ({ pieces: ['x', 'y'] });
    const res = await postJson(
      `${base}/llm/api/generate`,
      { model: 'fake', prompt: 'hello', stream: false },
      { headers: { 'content-type': 'application/json', ...tenant } },
    );
    assert.equal(res.status, 200);
    const usage = app.get<Usage>(REQUEST_HOOKS);
    const last = usage.ended.at(-1)!;
    assert.equal(last.kind, 'generate');
    assert.equal(last.model, 'fake:latest');
    assert.equal(last.completionTokens, 2);
    assert.ok(last.promptTokens > 0);
  });

  it('streams NDJSON under the prefix', async () => {
    binding.script = () => ({ pieces: ['1', '2'] });
    const res = await postJson(
      `${base}/llm/api/chat`,
      { model: 'fake', messages: [{ role: 'user', content: 'q' }] },
      { headers: { 'content-type': 'application/json', ...tenant } },
    );
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const lines = await readNdjson(res);
    assert.equal(lines.length, 3);
  });
});

describe('LlamadModule with one surface and no HTTP (FakeBinding)', () => {
  it('mounts only the chosen surface, behind the host global prefix', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'llamad-host-'));
    @Module({
      imports: [
        LlamadModule.forRoot({
          config: { modelsDir: join(dir, 'models'), logging: false },
          surfaces: ['openai'],
          prefix: 'x',
        }),
      ],
    })
    class OpenAIOnly {}
    const app = await NestFactory.create<NestFastifyApplication>(OpenAIOnly, new FastifyAdapter(), { logger: false });
    try {
      app.setGlobalPrefix('g');
      await app.listen(0, '127.0.0.1');
      const address = app.getHttpServer().address();
      const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      assert.equal((await fetch(`${base}/g/x/v1/models`)).status, 200);
      assert.equal((await fetch(`${base}/g/x/api/tags`)).status, 404);
      const evil = { origin: 'https://evil.example' };
      assert.equal((await fetch(`${base}/g/x/v1/models`, { headers: evil })).status, 403);
      assert.equal((await fetch(`${base}/g/other`, { headers: evil })).status, 404, 'not judged: the host’s path');
      assert.deepEqual(
        Object.keys(require.cache).filter((k) => k.endsWith('.node')),
        [],
        'no native addon loaded at bootstrap',
      );
    } finally {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('uses the MODEL_STORE and TEMPLATE_RENDERER the host provides', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'llamad-host-'));
    const listed: string[] = [];
    let renders = 0;
    const binding = new FakeBinding();
    @Module({
      imports: [
        LlamadModule.forRoot({
          config: { modelsDir: join(dir, 'models'), logging: false },
          surfaces: [],
          providers: [
            { provide: NATIVE_BINDING, useValue: () => binding },
            {
              provide: MODEL_STORE,
              inject: [DaemonConfig],
              useFactory: (config: DaemonConfig): ModelStore => {
                const store = new ModelStoreRepository(config);
                const listManifests = store.listManifests.bind(store);
                store.listManifests = () => {
                  listed.push('list');
                  return listManifests();
                };
                return store;
              },
            },
            {
              provide: TEMPLATE_RENDERER,
              useValue: {
                engine: () => {
                  renders++;
                  return undefined;
                },
              } satisfies TemplateRenderer,
            },
          ],
        }),
      ],
    })
    class Custom {}
    const ctx = await NestFactory.createApplicationContext(Custom, { logger: false });
    try {
      const llm = ctx.get(LlamadService);
      assert.deepEqual(await llm.list(), { models: [] });
      assert.ok(listed.length > 0, 'the list went through the host store');
      const gguf = join(dir, 'fake.gguf');
      await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
      await llm.create({ model: 'fake', from: gguf, template: '{{ .Prompt }}' }).response();
      const answer = await llm.generate({ model: 'fake', prompt: 'hi', stream: false }).response();
      assert.equal(answer.done, true);
      assert.ok(renders > 0, 'the prompt was rendered through the host renderer');
    } finally {
      await ctx.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('works as a plain application context (the facade without HTTP)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'llamad-host-'));
    @Module({ imports: [LlamadModule.forRoot({ config: { modelsDir: join(dir, 'models'), logging: false } })] })
    class Worker {}
    const ctx = await NestFactory.createApplicationContext(Worker, { logger: false });
    try {
      assert.deepEqual(await ctx.get(LlamadService).list(), { models: [] });
    } finally {
      await ctx.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
