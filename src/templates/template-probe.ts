/**
 * The create-time check of a Modelfile TEMPLATE (issue 32): besides parsing it, execute it once under the execution
 * budget (template-budget.ts) against representative values, so a template that cannot finish (`{{range
 * 100000000000}}{{end}}`) is refused when the model is created instead of failing every later request of the model.
 */
import { DaemonError } from '../common/errors';
import { GoTemplate } from './go-template';
import { RenderInput, TemplateTool } from './ollama-template.renderer';
import { renderPromptAsync } from './render-pool';
import { TemplateBudgetError } from './template-budget';

const SAMPLE_TOOL: TemplateTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: {
      type: 'object',
      required: ['city'],
      properties: {
        city: { type: 'string', description: 'The city' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
    },
  },
};

/**
 * The values a TEMPLATE is probed with: a chat (system, user, an assistant turn with thinking and a tool call, the
 * tool's answer, a final user turn) with one tool and thinking on; the same chat without tools or thinking; a
 * fill-in-the-middle request (`.Prompt` and `.Suffix`).
 */
function sampleInputs(): RenderInput[] {
  const chat = (): RenderInput['messages'] => [
    { role: 'system', content: 'You are a helpful assistant.' },
    { role: 'user', content: 'What is the weather in Paris?' },
    {
      role: 'assistant',
      content: '',
      thinking: 'The user wants the weather; call the tool.',
      toolCalls: [{ function: { index: 0, name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } } }],
    },
    { role: 'tool', content: '{"temperature": 21}', toolName: 'get_weather' },
    { role: 'assistant', content: 'It is 21 °C in Paris.' },
    { role: 'user', content: 'Thanks!' },
  ];
  return [
    { messages: chat(), tools: [SAMPLE_TOOL], think: true, thinkLevel: 'medium', isThinkSet: true },
    { messages: chat() },
    { messages: [], prompt: 'def add(a, b):\n    ', suffix: '\n\nprint(add(1, 2))' },
  ];
}

/**
 * Executes `template` against the sample values ({@link sampleInputs}), each render under its own budget sized to
 * its input as a request's would be (renderLimits), off the event loop once it runs past the inline budget
 * (renderPromptAsync, render-pool.ts). Only a budget overrun refuses the template: other execution errors (a template
 * that expects values these samples do not give) are ignored, as real requests may well give them.
 * @throws TemplateBudgetError `template: execution budget exceeded: …` when one of the renders runs past its budget;
 *   InternalError when a render worker failed.
 */
export async function probeTemplateBudget(template: GoTemplate): Promise<void> {
  for (const input of sampleInputs()) {
    try {
      await renderPromptAsync(template, input);
    } catch (err) {
      if (err instanceof TemplateBudgetError || err instanceof DaemonError) throw err;
    }
  }
}
