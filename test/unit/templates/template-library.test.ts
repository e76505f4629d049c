import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  GoTemplate,
  boundedLevenshtein,
  detectTemplate,
  jinjaCapabilities,
  templateCapabilities,
  templateVars,
} from '../../../src/templates';
import { TEMPLATE_ASSETS_DIR } from '../../../src/templates/template-library';

const cps = (s: string): number[] => Array.from(s, (c) => c.codePointAt(0) ?? 0);

describe('boundedLevenshtein', () => {
  it('computes distances below the limit and caps the rest', () => {
    assert.equal(boundedLevenshtein(cps('kitten'), cps('sitting'), 100), 3);
    assert.equal(boundedLevenshtein(cps(''), cps('abc'), 100), 3);
    assert.equal(boundedLevenshtein(cps('abc'), cps('abc'), 100), 0);
    assert.equal(boundedLevenshtein(cps('aaaaaaaaaa'), cps('bbbbbbbbbb'), 5), 5);
    assert.equal(boundedLevenshtein(cps('a'.repeat(300)), cps('a'), 100), 100);
    assert.equal(boundedLevenshtein(cps('héllo wörld'), cps('hello world'), 100), 2);
  });
});

describe('detectTemplate', () => {
  const index = JSON.parse(readFileSync(join(TEMPLATE_ASSETS_DIR, 'index.json'), 'utf8')) as {
    name: string;
    template: string;
  }[];
  index.forEach((e, i) => {
    it(`index.json entry ${i} → ${e.name}`, () => {
      const found = detectTemplate(e.template);
      assert.ok(found);
      assert.equal(found.name, e.name);
      assert.equal(found.template, readFileSync(join(TEMPLATE_ASSETS_DIR, `${e.name}.gotmpl`), 'utf8'));
    });
  });
  it('matches a slightly edited template and returns its params', () => {
    const llama3 = index.find((e) => e.name === 'llama3-instruct')!;
    const found = detectTemplate(llama3.template.replace('assistant', 'ASSISTANT') + ' ');
    assert.equal(found?.name, 'llama3-instruct');
    assert.deepEqual(found?.parameters, { stop: ['<|start_header_id|>', '<|end_header_id|>', '<|eot_id|>'] });
  });
  it('picks what an exhaustive search picks (entries skipped by length or histogram could never win)', () => {
    // Issue 32: the histogram bound skips most entries without the O(length × 100) distance. Edited copies of every
    // entry (cut, repeated, case-changed, spliced with another) must still get the exhaustive answer.
    const exhaustive = (jinja: string): string | null => {
      let best: string | null = null;
      let score = 100;
      for (const e of index) {
        const d = boundedLevenshtein(cps(jinja), cps(e.template), score);
        if (d < score) [score, best] = [d, e.name];
      }
      return best;
    };
    index.forEach((e, i) => {
      const other = index[(i + 1) % index.length].template;
      for (const edited of [
        e.template.slice(0, Math.floor(e.template.length * 0.97)),
        e.template.toUpperCase().slice(0, 60) + e.template.slice(60),
        e.template + e.template.slice(0, 50),
        e.template.slice(0, e.template.length / 2) + other.slice(other.length / 2),
      ]) {
        assert.equal(detectTemplate(edited)?.name ?? null, exhaustive(edited), `${e.name}, edited`);
      }
    });
  });
  it('returns null for an unrelated Jinja template', () => {
    const jinja =
      "{% for m in messages %}{{ '### ' + m['role'] | upper + ': ' }}{{ m['content'] | trim }}{{ '\\n' }}{% endfor %}" +
      "{% if add_generation_prompt %}{{ '### BOT: ' }}{% endif %}{# an unrelated custom format with a long comment #}";
    assert.equal(detectTemplate(jinja), null);
    assert.equal(detectTemplate(''), null);
  });
});

describe('capabilities', () => {
  it('derives tools / insert / thinking from a Go template', () => {
    assert.deepEqual(templateCapabilities(GoTemplate.parse('{{ range .Messages }}{{ .Content }}{{ end }}')), {
      tools: false,
      insert: false,
      thinking: false,
    });
    assert.deepEqual(templateCapabilities(GoTemplate.parse('{{ if .Tools }}{{ json .Tools }}{{ end }}')), {
      tools: true,
      insert: false,
      thinking: false,
    });
    assert.deepEqual(templateCapabilities(GoTemplate.parse('<PRE> {{ .Prompt }} <SUF>{{ .Suffix }} <MID>')), {
      tools: false,
      insert: true,
      thinking: false,
    });
    const thinking = GoTemplate.parse(
      '{{ range .Messages }}{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}{{ end }}',
    );
    assert.equal(templateCapabilities(thinking).thinking, true);
    // Ollama's heuristic needs text at both ends of the list enclosing .Thinking
    const unframed = GoTemplate.parse('{{ range .Messages }}<think>{{ .Thinking }}</think>{{ .Content }}{{ end }}');
    assert.equal(templateCapabilities(unframed).thinking, false);
  });
  it('library templates: only command-r has tools', () => {
    for (const f of readdirSync(TEMPLATE_ASSETS_DIR).filter((n) => n.endsWith('.gotmpl'))) {
      const caps = templateCapabilities(GoTemplate.parse(readFileSync(join(TEMPLATE_ASSETS_DIR, f), 'utf8')));
      assert.deepEqual(caps, { tools: f === 'command-r.gotmpl', insert: false, thinking: false }, f);
    }
  });
  it('templateVars lists lower-cased identifiers, including $-rooted ones and defines', () => {
    assert.deepEqual(
      templateVars(GoTemplate.parse('{{ define "x" }}{{ .Suffix }}{{ end }}{{ $.Messages }}{{ range .A.B }}{{ end }}')),
      ['$', 'a', 'b', 'messages', 'suffix'],
    );
  });
  it('sniffs Jinja templates by substring', () => {
    assert.deepEqual(jinjaCapabilities('{% if tools %}{{ tools | tojson }}{% endif %}'), {
      tools: true,
      thinking: false,
    });
    assert.deepEqual(jinjaCapabilities("{{ '<think>' }}{{ x }}{{ '</think>' }}"), { tools: false, thinking: true });
    assert.deepEqual(jinjaCapabilities("{% set c = content.split('</think>')[-1] %}"), {
      tools: false,
      thinking: true,
    });
    assert.deepEqual(jinjaCapabilities('{{ messages }}'), { tools: false, thinking: false });
  });
});
