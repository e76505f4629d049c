import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../../src/config';
import { GoTemplate, TemplateMessage, detectTemplate, renderPrompt } from '../../../src/templates';
import { TEMPLATE_ASSETS_DIR } from '../../../src/templates/template-library';

/** Ollama's golden renderings and detection cases, copied into the repository (see its README). */
const TESTDATA = join(REPO_ROOT, 'test', 'fixtures', 'ollama-templates', 'testdata');

const USER: TemplateMessage = { role: 'user', content: 'Hello, how are you?' };
const ASSISTANT: TemplateMessage = { role: 'assistant', content: "I'm doing great. How can I help you today?" };
const USER2: TemplateMessage = { role: 'user', content: "I'd like to show off how chat templating works!" };
const SYSTEM: TemplateMessage = { role: 'system', content: 'You are a helpful assistant.' };

/** The conversations of the golden cases, named by their roles (see the testdata README). */
const CONVERSATIONS: Record<string, TemplateMessage[]> = {
  user: [USER],
  'user-assistant-user': [USER, ASSISTANT, USER2],
  'system-user-assistant-user': [SYSTEM, USER, ASSISTANT, USER2],
};

/** Templates whose rendering has one trailing space dropped before comparing (as Ollama's own test does). */
const TRIM_ONE_SPACE = new Set(['chatqa', 'llama2-chat', 'mistral-instruct', 'openchat', 'vicuna']);

describe('golden renderings of the bundled template library', () => {
  it('testdata is present in test/fixtures/ollama-templates', () => {
    assert.ok(existsSync(TESTDATA), `missing ${TESTDATA}`);
  });

  const dirs = existsSync(TESTDATA)
    ? readdirSync(TESTDATA)
        .filter((d) => d.endsWith('.gotmpl') && statSync(join(TESTDATA, d)).isDirectory())
        .sort()
    : [];

  it('covers every bundled template', () => {
    const bundled = readdirSync(TEMPLATE_ASSETS_DIR)
      .filter((f) => f.endsWith('.gotmpl'))
      .sort();
    assert.deepEqual(dirs, bundled);
  });

  let total = 0;
  for (const dir of dirs) {
    const name = dir.slice(0, -'.gotmpl'.length);
    for (const c of readdirSync(join(TESTDATA, dir)).sort()) {
      total++;
      it(`${name} / ${c}`, () => {
        const messages = CONVERSATIONS[c];
        assert.ok(messages, `unknown golden case ${c}`);
        const expected = readFileSync(join(TESTDATA, dir, c), 'utf8');
        const tmpl = GoTemplate.parse(readFileSync(join(TEMPLATE_ASSETS_DIR, dir), 'utf8'));
        let actual = renderPrompt(tmpl, { messages: messages.map((m) => ({ ...m })) });
        if (TRIM_ONE_SPACE.has(name) && actual.endsWith(' ')) actual = actual.slice(0, -1);
        assert.equal(actual, expected);
      });
    }
  }

  it('found all golden files (20 templates x 3 conversations)', () => {
    assert.equal(total, 60);
  });
});

describe('detectTemplate on testdata/templates.jsonl', () => {
  const path = join(TESTDATA, 'templates.jsonl');
  const lines = existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
    : [];
  it('has cases', () => assert.ok(lines.length > 0));
  lines.forEach((line, i) => {
    const [[name, jinja]] = Object.entries(JSON.parse(line) as Record<string, string>);
    it(`line ${i + 1}: ${name}`, () => {
      const found = detectTemplate(jinja);
      assert.ok(found, 'no template detected');
      assert.equal(found.name, name);
    });
  });
});
