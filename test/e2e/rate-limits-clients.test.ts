import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startTenantHost, TenantHost } from '../utils/tenant-host';

/** The `x-stainless-retry-count` each request of `tenant` was sent with (the SDKs count their own retries). */
function retryCounts(host: TenantHost, tenant: string): string[] {
  return host.authorizer.seen
    .filter((r) => r.headers['x-tenant'] === tenant)
    .map((r) => String(r.headers['x-stainless-retry-count']));
}

// Issue 33 "Done when": the official clients, with their default retries (2), succeed after the reset of a
// requests-per-minute limit. The window is a minute, so both clients run at once, each as its own principal (the one
// slow test of the limits; FakeBinding, since decode speed is irrelevant).
describe('the official clients retry a 429 after retry-after and succeed (FakeBinding)', () => {
  let host: TenantHost;

  before(async () => {
    host = await startTenantHost({
      'openai-sdk': { limits: { requests_per_minute: 1 } },
      'anthropic-sdk': { limits: { requests_per_minute: 1 } },
    });
    host.binding.script = () => ({ pieces: ['Hi'] });
  });
  after(async () => {
    await host?.close();
  });

  it(
    'openai and @anthropic-ai/sdk: the second request of the minute waits for the reset, then succeeds',
    { timeout: 180_000 },
    async () => {
      const openai = new OpenAI({
        baseURL: `${host.base}/v1`,
        apiKey: 'x',
        defaultHeaders: { 'x-tenant': 'openai-sdk' },
      });
      const anthropic = new Anthropic({
        baseURL: host.base,
        apiKey: 'x',
        defaultHeaders: { 'x-tenant': 'anthropic-sdk' },
      });
      const messages = [{ role: 'user' as const, content: 'hi' }];
      const viaOpenAI = async () => {
        await openai.chat.completions.create({ model: 'fake', messages, max_tokens: 5 });
        const { data, response } = await openai.chat.completions
          .create({ model: 'fake', messages, max_tokens: 5 })
          .withResponse();
        assert.equal(data.object, 'chat.completion');
        assert.equal(response.headers.get('x-ratelimit-remaining-requests'), '0');
      };
      const viaAnthropic = async () => {
        await anthropic.messages.create({ model: 'fake', messages, max_tokens: 5 });
        const { data, response } = await anthropic.messages
          .create({ model: 'fake', messages, max_tokens: 5 })
          .withResponse();
        assert.equal(data.type, 'message');
        assert.equal(response.headers.get('anthropic-ratelimit-requests-remaining'), '0');
      };
      await Promise.all([viaOpenAI(), viaAnthropic()]);
      // First request, the refused one (retry 0), and its retry after retry-after-ms (retry 1): one wait was enough.
      assert.deepEqual(retryCounts(host, 'openai-sdk'), ['0', '0', '1']);
      assert.deepEqual(retryCounts(host, 'anthropic-sdk'), ['0', '0', '1']);
    },
  );
});
