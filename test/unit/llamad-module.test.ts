import { Controller, Get, Module } from '@nestjs/common';
import { GUARDS_METADATA, PIPES_METADATA, EXCEPTION_FILTERS_METADATA } from '@nestjs/common/constants';
import { APP_FILTER, APP_GUARD, APP_PIPE, NestFactory } from '@nestjs/core';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Observable, Subject, throwError } from 'rxjs';
import { AppController } from '../../src/api/ollama/app.controller';
import { OllamaExceptionFilter, OllamaValidationPipe, decodeRequestBody } from '../../src/common/http';
import { AnthropicController, AnthropicExceptionFilter } from '../../src/api/anthropic';
import { OpenAIController, OpenAIExceptionFilter } from '../../src/api/openai';
import { ResponsesController } from '../../src/api/openai/responses';
import { LlamadStream, observableIterator } from '../../src/api/ollama/llamad-stream';
import { ChatRequestDto } from '../../src/api/ollama/dto/chat-request.dto';
import { ChatController } from '../../src/api/ollama/chat.controller';
import { EmbedController } from '../../src/api/ollama/embed.controller';
import { GenerateController } from '../../src/api/ollama/generate.controller';
import { PsController } from '../../src/api/ollama/ps.controller';
import { isModulePath, LlamadModule, normalizePrefix } from '../../src/llamad.module';
import { BlobsController } from '../../src/api/ollama/blobs.controller';
import { ModelsController } from '../../src/api/ollama/models.controller';
import { UsageController } from '../../src/operations/usage/usage.controller';
import { RegistryController } from '../../src/api/ollama/registry.controller';
import { MAX_JSON_DEPTH, valueDepth } from '../../src/common/http';
import { AuthorizationGuard } from '../../src/security';

/** A nested array `depth` levels deep. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe('LlamadModule options', () => {
  it('normalizes the route prefix', () => {
    assert.equal(normalizePrefix('llm'), '/llm');
    assert.equal(normalizePrefix('/llm/'), '/llm');
    assert.equal(normalizePrefix(' /a/b '), '/a/b');
    assert.equal(normalizePrefix(''), '');
    assert.equal(normalizePrefix('/'), '');
    assert.equal(normalizePrefix(undefined), '');
  });

  it('gates the prefix only, or the API paths without a prefix', () => {
    assert.ok(isModulePath('/llm', '/llm'));
    assert.ok(isModulePath('/llm/api/chat', '/llm'));
    assert.ok(!isModulePath('/llmx', '/llm'));
    assert.ok(!isModulePath('/host/api', '/llm'));
    assert.ok(isModulePath('/', ''));
    assert.ok(isModulePath('/api/tags', ''));
    assert.ok(isModulePath('/v1/models', ''));
    assert.ok(!isModulePath('/apix', ''));
    assert.ok(!isModulePath('/host', ''));
  });

  it('rejects an unknown surface', () => {
    assert.throws(() => LlamadModule.forRoot({ surfaces: ['grpc' as never] }), /unknown surface "grpc"/);
  });

  it('installs no global filter, pipe or guard in the host', async () => {
    @Module({ imports: [LlamadModule.forRoot({ config: { logging: false } })] })
    class Host {}
    const ctx = await NestFactory.createApplicationContext(Host, { logger: false, abortOnError: false });
    try {
      const globals: unknown[] = [];
      for (const moduleRef of (
        ctx as unknown as { container: { getModules(): Map<string, { providers: Map<unknown, unknown> }> } }
      ).container
        .getModules()
        .values()) {
        for (const token of moduleRef.providers.keys()) {
          if (typeof token === 'string' && [APP_FILTER, APP_PIPE, APP_GUARD].some((t) => token.startsWith(t))) {
            globals.push(token);
          }
        }
      }
      assert.deepEqual(globals, []);
    } finally {
      await ctx.close();
    }
  });
});

describe('controller-scoped filters, pipes and guards', () => {
  const native = [
    AppController,
    GenerateController,
    ChatController,
    EmbedController,
    PsController,
    ModelsController,
    BlobsController,
    RegistryController,
    UsageController,
  ];
  type Ctor = abstract new (...args: never[]) => unknown;
  const cases: [Ctor, Ctor][] = [
    ...native.map((c): [Ctor, Ctor] => [c, OllamaExceptionFilter]),
    [OpenAIController, OpenAIExceptionFilter],
    [ResponsesController, OpenAIExceptionFilter],
    [AnthropicController, AnthropicExceptionFilter],
  ];
  for (const [controller, filter] of cases) {
    it(`${controller.name} carries its dialect filter, the validation pipe and the guard`, () => {
      assert.deepEqual(Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, controller), [filter]);
      assert.deepEqual(Reflect.getMetadata(PIPES_METADATA, controller), [OllamaValidationPipe]);
      assert.deepEqual(Reflect.getMetadata(GUARDS_METADATA, controller), [AuthorizationGuard]);
    });
  }

  it('a host controller carries none of them', () => {
    @Controller('x')
    class HostController {
      @Get() get(): string {
        return 'x';
      }
    }
    assert.equal(Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, HostController), undefined);
  });
});

describe('LlamadStream', () => {
  it('iterates the chunks and cancels the producer when the loop breaks', async () => {
    const source = new Subject<number>();
    let subscribed = 0;
    let unsubscribed = 0;
    const producer = new Observable<number>((subscriber) => {
      subscribed++;
      const sub = source.subscribe(subscriber);
      return () => {
        unsubscribed++;
        sub.unsubscribe();
      };
    });
    const stream = new LlamadStream(producer, producer, true);
    assert.equal(subscribed, 0, 'nothing runs before it is consumed');
    const seen: number[] = [];
    const loop = (async () => {
      for await (const n of stream) {
        seen.push(n);
        if (seen.length === 2) break;
      }
    })();
    await new Promise((r) => setImmediate(r));
    source.next(1);
    source.next(2);
    source.next(3);
    await loop;
    assert.deepEqual(seen, [1, 2]);
    assert.equal(subscribed, 1);
    assert.equal(unsubscribed, 1);
  });

  it('buffers values produced before they are taken, then completes', async () => {
    const stream = new LlamadStream(
      new Observable<number>((s) => {
        s.next(1);
        s.next(2);
        s.complete();
      }),
      new Observable<string>((s) => {
        s.next('a');
        s.next('final');
        s.complete();
      }),
      false,
    );
    assert.deepEqual(await stream.toArray(), [1, 2]);
    assert.equal(await stream.response(), 'final');
    assert.equal(stream.stream, false);
  });

  it('rejects the loop with the stream error, after the values before it', async () => {
    const err = new Error('boom');
    const source$ = new Observable<number>((s) => {
      s.next(1);
      s.error(err);
    });
    const seen: number[] = [];
    await assert.rejects(async () => {
      for await (const n of new LlamadStream(
        source$,
        throwError(() => err),
        true,
      )) {
        seen.push(n);
      }
    }, err);
    assert.deepEqual(seen, [1]);
  });

  it('unsubscribes when the consumer throws inside the loop', async () => {
    let unsubscribed = false;
    const source$ = new Observable<number>((s) => {
      s.next(1);
      return () => {
        unsubscribed = true;
      };
    });
    await assert.rejects(async () => {
      for await (const n of new LlamadStream(source$, source$, true)) throw new Error(`consumer ${n}`);
    }, /consumer 1/);
    assert.ok(unsubscribed);
  });

  it('answers done after return()', async () => {
    const it = observableIterator(new Subject<number>());
    await it.return?.();
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  });
});

describe('decodeRequestBody (the facade validates plain requests as the pipe does)', () => {
  it('returns a validated DTO instance, unknown fields dropped', () => {
    const dto = decodeRequestBody(ChatRequestDto, { model: 'm', messages: [{ role: 'user', content: 'x' }], zzz: 1 });
    assert.ok(dto instanceof ChatRequestDto);
    assert.equal(dto.model, 'm');
    assert.equal((dto as unknown as Record<string, unknown>).zzz, undefined);
  });

  it('keeps an already validated instance as is', () => {
    const dto = Object.assign(new ChatRequestDto(), { model: 'm' });
    assert.equal(decodeRequestBody(ChatRequestDto, dto), dto);
  });

  it('fails with Ollama’s messages', () => {
    assert.throws(() => decodeRequestBody(ChatRequestDto, undefined), /missing request body/);
    assert.throws(
      () => decodeRequestBody(ChatRequestDto, [1]),
      /json: cannot unmarshal array into Go value of type api.ChatRequest/,
    );
    assert.throws(
      () => decodeRequestBody(ChatRequestDto, { model: 5 }),
      (err: Error & { param?: string }) => {
        assert.match(err.message, /cannot unmarshal number/);
        return true;
      },
    );
    assert.throws(
      () => decodeRequestBody(ChatRequestDto, { options: nested(MAX_JSON_DEPTH + 1) }),
      /nested too deeply/,
    );
  });
});

describe('valueDepth', () => {
  it('counts the nesting of parsed values without recursion', () => {
    assert.equal(valueDepth(1), 0);
    assert.equal(valueDepth({}), 1);
    assert.equal(valueDepth({ a: [{ b: 1 }] }), 3);
    assert.equal(valueDepth(nested(100_000), 512), 513);
  });
});
