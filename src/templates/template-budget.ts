/**
 * The execution budget of the Go-template executor: every render counts its steps and the characters it produces, and
 * stops with {@link TemplateBudgetError} when either passes its limit. Go's text/template has no such limit (Ollama
 * runs each template in a goroutine of its own); here small renders run on the daemon's event loop and large or long
 * ones in a worker thread (render-pool.ts), under the same budget, so one hostile template (`{{range
 * 100000000000}}{{end}}`, a Modelfile TEMPLATE that doubles a string thirty times) must neither stall every other
 * request nor hold a CPU for long (issue 32, docs/security.md "Budgets"). All limits live in this file.
 */
import { TemplateError } from './go-template.parser';
import { mapEntries } from './go-values';

/**
 * Steps every render may take whatever its input: far more than any template needs for a short conversation with a
 * few tools (the bundled library and Ollama's tool templates take 20–60 steps per message). Measured on the 2-core
 * x86-64 build machine (Node 22, heavily loaded, CPU time): a render that spends all 200,000 steps in `{{range
 * 100000000000}}{{end}}` takes 15–35 ms, nested ranges or recursive `{{template}}` calls 12–20 ms, and the costliest
 * steps found (string comparisons and slices of large values, charged by size, see
 * {@link FUNCTION_UNITS_PER_STEP}) 15–55 ms. test/unit/templates/template-budget.test.ts has the cases.
 */
export const TEMPLATE_BASE_STEPS = 200_000;

/**
 * Extra steps per message of the conversation. Templates take 20–60 steps per message, plus n/128 on average for
 * the look-back idiom `len (slice $.Messages $i)` of many tool templates (the copy is charged by its length, see
 * {@link FUNCTION_UNITS_PER_STEP}): 500 covers those up to ~50,000 messages. A hostile template thus costs at most
 * ~10–25× what a legitimate one costs on the same conversation (plus the base).
 */
export const TEMPLATE_STEPS_PER_MESSAGE = 500;

/** Extra steps per tool: templates range over a tool's properties (charged per character below as well). */
export const TEMPLATE_STEPS_PER_TOOL = 1_000;

/**
 * Extra steps per character of tool JSON (the tools' definitions and the tool calls' arguments): a template may range
 * over every property of every schema and every argument, and a property takes more than 10 characters of JSON.
 */
export const TEMPLATE_STEPS_PER_TOOL_CHAR = 1;

/**
 * Characters (UTF-16 code units) every render may produce whatever its input: 1 Mi, far above any template's own
 * text (the input is allowed for below). Producing 1 Mi characters by printing large values (`{{$.Messages}}`,
 * `json`) took 30–130 ms in the measurement above, by plain text ~13 ms. "Produced" counts the text written to the output and every string a function returns (`printf`,
 * `print`, `json`, `html`, …; a returned string that is then printed counts twice), so a template that builds a
 * huge string in a variable and never prints it is stopped just as one that prints it.
 */
export const TEMPLATE_BASE_OUTPUT = 1024 * 1024;

/**
 * Extra characters per character of input (message contents, thinking, tool-call arguments, tool definitions): the
 * prompt is the conversation plus the template's own text, and a template may print a value a few times (a content
 * and its JSON, a tool call's arguments as a map and as JSON): 4× leaves room for that.
 */
export const TEMPLATE_OUTPUT_PER_INPUT_CHAR = 4;

/** Extra characters per message (role headers, separators: the templates measured produce ≤ 350 per message). */
export const TEMPLATE_OUTPUT_PER_MESSAGE = 1024;

/** Extra characters per tool (the fixed text some templates print around each tool). */
export const TEMPLATE_OUTPUT_PER_TOOL = 4 * 1024;

/**
 * A function call costs one step plus one per this many units of its arguments and result (characters of strings,
 * elements of slices): `eq`/`lt` on long strings, `len`/`index`/`slice` of a string (UTF-8 conversion) and `slice`
 * of a list (a copy) take time proportional to them, so a loop over such calls is charged for that time.
 */
export const FUNCTION_UNITS_PER_STEP = 64;

/** The limits of one render. */
export interface TemplateLimits {
  /** Executed steps: nodes walked, range iterations, `{{template}}` calls, function calls (weighted). */
  steps: number;
  /** Characters produced: text written to the output plus strings returned by functions. */
  output: number;
}

/** The limits when the input is not known (a template executed without a conversation). */
export const DEFAULT_TEMPLATE_LIMITS: Readonly<TemplateLimits> = Object.freeze({
  steps: TEMPLATE_BASE_STEPS,
  output: TEMPLATE_BASE_OUTPUT,
});

/**
 * A render that went past its budget. The message starts with `template: ` like Go's template errors:
 * `template: execution budget exceeded: more than N steps` or `… more than N characters of output`.
 */
export class TemplateBudgetError extends TemplateError {
  constructor(
    /** Which limit was passed. */
    readonly resource: 'steps' | 'output',
    /** That limit. */
    readonly limit: number,
  ) {
    super(
      `template: execution budget exceeded: more than ${limit} ${resource === 'steps' ? 'steps' : 'characters of output'}`,
    );
    this.name = 'TemplateBudgetError';
  }
}

/**
 * The running counters of one render, shared by every execution it makes (legacy templates execute once per turn).
 * @throws TemplateBudgetError from {@link step} / {@link produce} as soon as a limit is passed.
 */
export class TemplateBudget {
  private steps = 0;
  private output = 0;
  private readonly sorted = new WeakMap<object, [unknown, unknown][]>();

  constructor(readonly limits: Readonly<TemplateLimits> = DEFAULT_TEMPLATE_LIMITS) {}

  /** Charges `n` steps. */
  step(n = 1): void {
    this.steps += n;
    if (this.steps > this.limits.steps) throw new TemplateBudgetError('steps', this.limits.steps);
  }

  /** Charges `chars` characters of produced text. */
  produce(chars: number): void {
    this.output += chars;
    if (this.output > this.limits.output) throw new TemplateBudgetError('output', this.limits.output);
  }

  /**
   * Charges a function call's arguments: a step per {@link FUNCTION_UNITS_PER_STEP} characters of string arguments
   * (comparing, measuring, indexing or slicing a string reads it); a list or map is passed by reference, and what a
   * function builds from one is charged as its result.
   */
  callArgs(args: readonly unknown[]): void {
    let units = 0;
    for (const a of args) if (typeof a === 'string') units += a.length;
    this.step(Math.floor(units / FUNCTION_UNITS_PER_STEP));
  }

  /**
   * Charges a function's result: a step per {@link FUNCTION_UNITS_PER_STEP} characters of a string or elements of a
   * slice (built or copied); a string result also counts as produced characters (a template may build a huge string
   * in a variable without printing it).
   */
  callResult(result: unknown): void {
    if (typeof result === 'string') {
      this.step(Math.floor(result.length / FUNCTION_UNITS_PER_STEP));
      this.produce(result.length);
    } else if (Array.isArray(result) || result instanceof Uint8Array) {
      this.step(Math.floor(result.length / FUNCTION_UNITS_PER_STEP));
    }
  }

  /**
   * A map's entries in key order for `{{range}}`, sorted once per render (template data does not change while it
   * runs) and charged a step per entry then, so ranging again over a large map (even to break at once) costs little.
   */
  mapEntries(map: object): [unknown, unknown][] {
    let entries = this.sorted.get(map);
    if (!entries) {
      entries = mapEntries(map);
      this.step(entries.length);
      this.sorted.set(map, entries);
    }
    return entries;
  }

  /** Steps and characters charged so far. */
  get used(): TemplateLimits {
    return { steps: this.steps, output: this.output };
  }
}

/** What the limits of a render depend on (the shape of RenderInput in ollama-template.renderer.ts). */
export interface BudgetInput {
  messages?: readonly { content?: string; thinking?: string; toolCalls?: readonly unknown[] }[];
  tools?: readonly unknown[];
  prompt?: string;
  suffix?: string;
}

function jsonChars(v: unknown): number {
  try {
    return JSON.stringify(v)?.length ?? 0;
  } catch {
    return 0;
  }
}

/** How large a render's input is: what {@link renderLimits} grows with. */
export interface RenderInputSize {
  messages: number;
  tools: number;
  /** Characters of message contents, thinking, FIM prompt and suffix. */
  textChars: number;
  /** Characters of tool JSON: the tools' definitions and the tool calls' arguments. */
  toolChars: number;
}

/** The size of `input` (one pass; tool definitions and calls are measured as JSON text). */
export function renderInputSize(input: BudgetInput): RenderInputSize {
  const messages = input.messages ?? [];
  const tools = input.tools ?? [];
  let toolChars = 0;
  let textChars = (input.prompt?.length ?? 0) + (input.suffix?.length ?? 0);
  for (const m of messages) {
    textChars += (m.content?.length ?? 0) + (m.thinking?.length ?? 0);
    for (const c of m.toolCalls ?? []) toolChars += jsonChars(c);
  }
  for (const t of tools) toolChars += jsonChars(t);
  return { messages: messages.length, tools: tools.length, textChars, toolChars };
}

/**
 * The limits of rendering `input`: a base plus allowances that grow with the conversation, so that any legitimate
 * template renders any conversation the request limits admit, while a render's cost stays proportional to the
 * request that asked for it:
 * - steps = {@link TEMPLATE_BASE_STEPS} + {@link TEMPLATE_STEPS_PER_MESSAGE} × messages + {@link
 *   TEMPLATE_STEPS_PER_TOOL} × tools + {@link TEMPLATE_STEPS_PER_TOOL_CHAR} × characters of tool JSON (definitions
 *   and call arguments);
 * - output = {@link TEMPLATE_BASE_OUTPUT} + {@link TEMPLATE_OUTPUT_PER_INPUT_CHAR} × input characters (contents,
 *   thinking, FIM prompt/suffix, tool JSON) + {@link TEMPLATE_OUTPUT_PER_MESSAGE} × messages + {@link
 *   TEMPLATE_OUTPUT_PER_TOOL} × tools.
 * @param input the render input, or its size ({@link renderInputSize}) when already measured.
 */
export function renderLimits(input: BudgetInput | RenderInputSize): TemplateLimits {
  const { messages, tools, textChars, toolChars } = isSize(input) ? input : renderInputSize(input);
  return {
    steps:
      TEMPLATE_BASE_STEPS +
      TEMPLATE_STEPS_PER_MESSAGE * messages +
      TEMPLATE_STEPS_PER_TOOL * tools +
      TEMPLATE_STEPS_PER_TOOL_CHAR * toolChars,
    output:
      TEMPLATE_BASE_OUTPUT +
      TEMPLATE_OUTPUT_PER_INPUT_CHAR * (textChars + toolChars) +
      TEMPLATE_OUTPUT_PER_MESSAGE * messages +
      TEMPLATE_OUTPUT_PER_TOOL * tools,
  };
}

function isSize(input: BudgetInput | RenderInputSize): input is RenderInputSize {
  return typeof (input as RenderInputSize).textChars === 'number';
}
