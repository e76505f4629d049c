import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { InvalidRequestError, RequestCancelledError } from '../../../../src/common/errors';
import { ChatMessage } from '../../../../src/generation/generation.types';
import { goTemplateFor, renderGoText, renderGoTextAsync } from '../../../../src/generation/prompt/go-render';
import { GoTemplatesApi, loadGoTemplates } from '../../../../src/generation/prompt/go-template.port';
import { closeRenderPool, TemplateBudgetError } from '../../../../src/templates';

// The prompt stage renders Go templates with renderGoTextAsync (src/templates/render-pool.ts: large and long renders
// in a worker thread): the same text and the same 400s as the inline renderGoText, plus the request's abort.

const opts = { think: undefined, thinking: false };
const chat = (n: number): ChatMessage[] =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 || i === n - 1 ? 'user' : 'assistant', content: `m${i}` }));

async function outcome(render: () => Promise<string> | string): Promise<string | Error> {
  try {
    return await render();
  } catch (err) {
    return err as Error;
  }
}

describe('renderGoTextAsync (the prompt stage’s Go-template render)', () => {
  after(() => closeRenderPool());
  const go = (text: string) => goTemplateFor(text, loadGoTemplates())!;

  it('renders what renderGoText renders, small (inline) and large (worker) inputs alike', async () => {
    const { api, template } = go('{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}{{ if .Think }}T{{ end }}');
    for (const messages of [chat(3), chat(1000)]) {
      const text = await renderGoTextAsync(api, template, messages, opts);
      assert.equal(text, renderGoText(api, template, messages, opts));
      assert.ok(text.startsWith('<user>m0<assistant>m1'));
    }
  });

  it('a template past its budget is the same 400 `template: execution budget exceeded: …`', async () => {
    for (const [source, messages] of [
      ['{{ range 100000000000 }}{{ end }}', chat(1)],
      ['{{ range 100000000000 }}{{ end }}', chat(500)],
      ['{{ .Messages }}{{ range 100000 }}{{ $.Messages }}{{ end }}', chat(2)],
    ] as const) {
      const { api, template } = go(source);
      const inline = await outcome(() => renderGoText(api, template, messages, opts));
      const async = await outcome(() => renderGoTextAsync(api, template, messages, opts));
      assert.ok(async instanceof InvalidRequestError, String(async));
      assert.ok(inline instanceof InvalidRequestError);
      assert.equal(async.message, inline.message);
      assert.match(async.message, /^template: execution budget exceeded: more than \d+ (steps|characters of output)$/);
      assert.equal(async.param, 'template');
      assert.ok(async.cause instanceof TemplateBudgetError);
    }
    const { api, template } = go('{{ index .Messages 5 }}');
    const err = await outcome(() => renderGoTextAsync(api, template, chat(1), opts));
    assert.ok(err instanceof InvalidRequestError);
    assert.equal(err.message, ((await outcome(() => renderGoText(api, template, chat(1), opts))) as Error).message);
    assert.match(err.message, /^template error: .*error calling index/);
  });

  it('an aborted render is RequestCancelledError, not a template error', async () => {
    const { api, template } = go('{{ range .Messages }}{{ range 200 }}{{ end }}{{ end }}');
    const controller = new AbortController();
    const running = outcome(() => renderGoTextAsync(api, template, chat(40_000), opts, controller.signal));
    setTimeout(() => controller.abort(), 100);
    assert.ok((await running) instanceof RequestCancelledError);
  });

  it('an engine without renderPromptAsync (a scripted one) renders inline with renderPrompt', async () => {
    const real = loadGoTemplates()!;
    const scripted: GoTemplatesApi = { ...real, renderPromptAsync: undefined, renderPrompt: () => 'scripted' };
    const { template } = go('{{ .Prompt }}');
    assert.equal(await renderGoTextAsync(scripted, template, chat(1), opts), 'scripted');
  });
});
