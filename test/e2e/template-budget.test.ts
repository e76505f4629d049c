import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** Templates that never finish (or build gigabytes) without the execution budget (issue 32 item 1). */
const HOSTILE = [
  '{{range 100000000000}}{{end}}',
  '{{range 100000}}{{range 100000}}{{.}}{{end}}{{end}}',
  '{{define "a"}}{{if lt (len .) 60}}{{template "a" (print . "x")}}{{template "a" (print . "y")}}{{end}}{{end}}{{template "a" ""}}',
  '{{$x := "xxxxxxxx"}}{{range 60}}{{$x = printf "%s%s" $x $x}}{{end}}{{.Prompt}}',
];

const BUDGET_ERROR = /^template: execution budget exceeded: more than \d+ (steps|characters of output)$/;

/** GET /api/version with a hang guard; resolves with the status. */
async function version(baseUrl: string): Promise<number> {
  const res = await fetch(`${baseUrl}/api/version`, { signal: AbortSignal.timeout(5000) });
  await res.arrayBuffer();
  return res.status;
}

// Issue 32 item 1: a hostile Go template (request `template` or Modelfile TEMPLATE) is stopped by the execution
// budget (src/templates/template-budget.ts) with a 400, the daemon keeps answering, and the model stays usable.
describe('template execution budget end to end (tiny-qwen2, real addon)', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { contextLength: 512 } });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'm',
      modelfile: `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`,
      stream: false,
    });
    assert.equal(res.status, 200, await res.clone().text());
    // Load the model first: the hostile requests below are then answered without waiting for a runner to start.
    const warm = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'm',
      prompt: 'hi',
      stream: false,
      options: { num_predict: 1 },
    });
    assert.equal(warm.status, 200, await warm.clone().text());
  });

  after(() => t?.close());

  it('/api/generate with a hostile `template` answers 400 within seconds while /api/version keeps answering', async () => {
    let stop = false;
    const polls: number[] = [];
    const poller = (async () => {
      while (!stop) {
        polls.push(await version(t.baseUrl));
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    try {
      const answers = await Promise.all(
        HOSTILE.map(async (template) => {
          const res = await postJson(
            `${t.baseUrl}/api/generate`,
            { model: 'm', prompt: 'hi', template, stream: false },
            { signal: AbortSignal.timeout(10000) },
          );
          return { status: res.status, body: (await res.json()) as { error?: string } };
        }),
      );
      for (const a of answers) {
        assert.equal(a.status, 400, JSON.stringify(a.body));
        assert.match(a.body.error ?? '', BUDGET_ERROR);
      }
      // Streamed: the same 400 before any chunk.
      const streamed = await postJson(
        `${t.baseUrl}/api/generate`,
        { model: 'm', prompt: 'hi', template: HOSTILE[0] },
        { signal: AbortSignal.timeout(10000) },
      );
      assert.equal(streamed.status, 400);
      assert.match(((await streamed.json()) as { error: string }).error, BUDGET_ERROR);
    } finally {
      stop = true;
      await poller;
    }
    assert.ok(polls.length > 0);
    assert.ok(
      polls.every((s) => s === 200),
      `version answers: ${polls.join(',')}`,
    );
    assert.equal(await version(t.baseUrl), 200);
  });

  it('/api/create with a hostile TEMPLATE is refused (both forms), and no model is stored', async () => {
    for (const template of HOSTILE) {
      const res = await postJson(`${t.baseUrl}/api/create`, {
        model: 'hostile',
        modelfile: `FROM ${TINY_QWEN2}\nTEMPLATE """${template}"""`,
        stream: false,
      });
      assert.equal(res.status, 400, template);
      assert.match(((await res.json()) as { error: string }).error, BUDGET_ERROR);
    }
    const streamed = await postJson(`${t.baseUrl}/api/create`, {
      model: 'hostile',
      from: 'm',
      template: '{{ if .Tools }}{{range 100000000000}}{{end}}{{ end }}{{ range .Messages }}{{ .Content }}{{ end }}',
    });
    const error = streamed.ok
      ? ((await readNdjson<{ error?: string }>(streamed)).at(-1)?.error ?? '')
      : ((await streamed.json()) as { error: string }).error;
    assert.match(error, BUDGET_ERROR);
    const show = await postJson(`${t.baseUrl}/api/show`, { model: 'hostile' });
    assert.equal(show.status, 404);
    // A template that only fails on values the probe does not give is accepted, as today.
    const lenient = await postJson(`${t.baseUrl}/api/create`, {
      model: 'lenient',
      from: 'm',
      template:
        '{{ if gt (len .Messages) 50 }}{{ index .Messages 99 }}{{ end }}{{ range .Messages }}{{ .Content }}{{ end }}',
      stream: false,
    });
    assert.equal(lenient.status, 200, await lenient.clone().text());
  });

  it('the model stays usable after the refusals', async () => {
    const res = await postJson(
      `${t.baseUrl}/api/generate`,
      { model: 'm', prompt: 'hi', stream: false, options: { num_predict: 3 } },
      { signal: AbortSignal.timeout(30000) },
    );
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { done: boolean; eval_count: number };
    assert.equal(body.done, true);
    assert.ok(body.eval_count > 0);
    const custom = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'm',
      prompt: 'hi',
      template: '{{ .Prompt }}',
      raw: false,
      stream: false,
      options: { num_predict: 2 },
    });
    assert.equal(custom.status, 200, await custom.clone().text());
  });
});
