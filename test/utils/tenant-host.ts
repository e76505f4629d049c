import { Module, Provider, Type } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AUTHORIZER,
  AuthorizationRequest,
  LlamadModule,
  NATIVE_BINDING,
  Principal,
  RequestAuthorizer,
  UnauthorizedError,
} from '../../src';
import type { DaemonConfig } from '../../src/config';
import type { TenantPolicy } from '../../src/security/tenant-policy';
import { FakeBinding } from './fake-binding';
import { writeTinyGguf } from './gguf-fixtures';
import { listenHost } from './host';
import { postJson } from './ndjson';

/**
 * A host authorizer whose tenants (header `x-tenant`) carry policies, as a host's AUTHORIZER may return them
 * (issue 33): principal id `tenant:<name>`, the policy of `policies[name]`; a tenant without an entry has no policy
 * (an unlimited admin); no header is a 401.
 */
export class PolicyAuthorizer implements RequestAuthorizer {
  /** Every request it was asked about, in order (headers included: what the clients sent). */
  readonly seen: AuthorizationRequest[] = [];

  constructor(private readonly policies: Record<string, TenantPolicy>) {}

  authorize(request: AuthorizationRequest): Promise<Principal> {
    this.seen.push(request);
    const tenant = request.headers['x-tenant'];
    if (typeof tenant !== 'string' || tenant === '') return Promise.reject(new UnauthorizedError());
    const policy = this.policies[tenant];
    return Promise.resolve({ id: `tenant:${tenant}`, name: tenant, ...(policy ? { policy } : {}) });
  }
}

/** Options of {@link startFakeHost}. */
export interface FakeHostOptions {
  /** Providers of the module beside NATIVE_BINDING (an AUTHORIZER, a TENANT_POLICY_SOURCE, a store…). */
  providers: Provider[];
  /** The host's own controllers. */
  controllers?: Type[];
  /** Settings over `{modelsDir, logging: false, contextLength: 512}`. */
  config?: Partial<DaemonConfig>;
  /** Shared between hosts; default a new one. */
  binding?: FakeBinding;
  /** Models created from one tiny ChatML GGUF at start (default `fake`). */
  models?: string[];
  /** Headers of the create requests (an admin's). */
  createHeaders: Record<string, string>;
}

/** A host application started by {@link startFakeHost}. */
export interface FakeHost {
  app: NestFastifyApplication;
  base: string;
  binding: FakeBinding;
  /** The tiny GGUF the models were created from. */
  gguf: string;
  close(): Promise<void>;
}

/**
 * Starts a host application that imports LlamadModule (no prefix) over a FakeBinding, in a fresh models folder, and
 * creates `models` from one tiny ChatML GGUF with `createHeaders`.
 */
export async function startFakeHost(options: FakeHostOptions): Promise<FakeHost> {
  const dir = await mkdtemp(join(tmpdir(), 'llamad-fake-host-'));
  const binding = options.binding ?? new FakeBinding();
  @Module({
    imports: [
      LlamadModule.forRoot({
        config: { modelsDir: join(dir, 'models'), logging: false, contextLength: 512, ...options.config },
        providers: [{ provide: NATIVE_BINDING, useValue: () => binding }, ...options.providers],
      }),
    ],
    controllers: options.controllers ?? [],
  })
  class FakeHostModule {}
  const { app, base } = await listenHost(FakeHostModule);
  const gguf = join(dir, 'fake.gguf');
  await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
  for (const model of options.models ?? ['fake']) {
    const res = await postJson(
      `${base}/api/create`,
      { model, from: gguf, stream: false },
      { headers: { 'content-type': 'application/json', ...options.createHeaders } },
    );
    assert.equal(res.status, 200, await res.clone().text());
  }
  return {
    app,
    base,
    binding,
    gguf,
    close: async () => {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A host application with LlamadModule, a FakeBinding, the model `fake` and a {@link PolicyAuthorizer}. */
export interface TenantHost extends FakeHost {
  authorizer: PolicyAuthorizer;
}

/**
 * Starts a host application ({@link startFakeHost}) whose AUTHORIZER is a {@link PolicyAuthorizer} over `policies`,
 * and creates the model `fake` as tenant `admin` (no policy).
 * @param config settings (e.g. `redisUrl`); `binding` to share one FakeBinding between hosts.
 */
export async function startTenantHost(
  policies: Record<string, TenantPolicy>,
  config: Partial<DaemonConfig> = {},
  binding: FakeBinding = new FakeBinding(),
): Promise<TenantHost> {
  const authorizer = new PolicyAuthorizer(policies);
  const host = await startFakeHost({
    providers: [{ provide: AUTHORIZER, useValue: authorizer }],
    config,
    binding,
    createHeaders: { 'x-tenant': 'admin' },
  });
  return { ...host, authorizer };
}

/** A dialect of the metered routes. */
export type Dialect = 'openai' | 'anthropic' | 'ollama';

/** What {@link chat} returns: status, headers, parsed body and the prompt size the dialect reported. */
export interface ChatAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  /** `usage.prompt_tokens`, `usage.input_tokens` or `prompt_eval_count` of a 200; undefined otherwise. */
  promptTokens?: number;
}

/**
 * One non-streamed chat request in a dialect (`/v1/chat/completions`, `/v1/messages`, `/api/chat`) as `tenant`, with
 * an output limit of `maxTokens` (`max_tokens`, `max_tokens`, `options.num_predict`).
 */
export async function chat(base: string, dialect: Dialect, tenant: string, maxTokens: number): Promise<ChatAnswer> {
  const messages = [{ role: 'user', content: 'hi' }];
  const [path, body] =
    dialect === 'openai'
      ? ['/v1/chat/completions', { model: 'fake', messages, max_tokens: maxTokens }]
      : dialect === 'anthropic'
        ? ['/v1/messages', { model: 'fake', messages, max_tokens: maxTokens }]
        : ['/api/chat', { model: 'fake', messages, stream: false, options: { num_predict: maxTokens } }];
  const res = await postJson(`${base}${path}`, body, {
    headers: { 'content-type': 'application/json', 'x-tenant': tenant, 'anthropic-version': '2023-06-01' },
  });
  const parsed = (await res.json()) as Record<string, unknown>;
  const usage = parsed.usage as { prompt_tokens?: number; input_tokens?: number } | undefined;
  const promptTokens =
    res.status !== 200
      ? undefined
      : (usage?.prompt_tokens ?? usage?.input_tokens ?? (parsed.prompt_eval_count as number));
  return { status: res.status, headers: res.headers, body: parsed, promptTokens };
}
