import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { goTemplateFor, renderGo } from '../../../../src/generation/prompt/go-render';
import { loadGoTemplates, templateErrorMessage } from '../../../../src/generation/prompt/go-template.port';
import { TemplateBudgetError } from '../../../../src/templates';

// Rendered mode runs the request `template` / Modelfile TEMPLATE under the template execution budget
// (src/templates/template-budget.ts): a template that would hold the event loop is a 400 whose message starts with
// `template: ` (issue 32); other template errors keep Ollama's `template error: …` (reference §5.2).

const messages = [{ role: 'user' as const, content: 'hi' }];
const opts = { think: undefined, thinking: false };

function render(text: string): string | Error {
  const go = goTemplateFor(text, loadGoTemplates())!;
  try {
    return renderGo(go.api, go.template, messages, opts, {}).text;
  } catch (e) {
    return e as Error;
  }
}

describe('renderGo under the execution budget', () => {
  it('renders a normal template', () => {
    assert.equal(render('{{range .Messages}}<{{.Role}}>{{.Content}}{{end}}'), '<user>hi');
  });

  it('answers a template that runs past its budget with InvalidRequestError `template: execution budget exceeded: …`', () => {
    for (const t of ['{{range 100000000000}}{{end}}', '{{range 100000}}{{range 100000}}xxxx{{end}}{{end}}']) {
      const r = render(t);
      assert.ok(r instanceof InvalidRequestError, String(r));
      assert.match(r.message, /^template: execution budget exceeded: more than \d+ (steps|characters of output)$/);
      assert.equal(r.param, 'template');
      assert.ok(r.cause instanceof TemplateBudgetError);
    }
  });

  it('keeps `template error: …` for other execution errors', () => {
    const r = render('{{ index .Messages 5 }}');
    assert.ok(r instanceof InvalidRequestError);
    assert.match(
      r.message,
      /^template error: template: :1:3: executing "" at <index>: error calling index: index out of range: 5$/,
    );
    assert.equal(templateErrorMessage(new Error('x')), 'template error: x');
  });
});
