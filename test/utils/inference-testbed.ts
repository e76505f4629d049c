import { Logger } from '@nestjs/common';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { DaemonConfig } from '../../src/config';
import { ChatService } from '../../src/generation/chat.service';
import { CompletionService } from '../../src/generation/completion.service';
import { EmbedService } from '../../src/generation/embed.service';
import { GenerateService } from '../../src/generation/generate.service';
import type { GenerateCommand } from '../../src/generation/generation.types';
import { PromptService } from '../../src/generation/prompt/prompt.service';
import { LlamaRunnerFactory } from '../../src/runner/llama-runner.factory';
import { RunnerFactory } from '../../src/runner/runner';
import { SchedulerService } from '../../src/scheduler/scheduler.service';
import type { MemoryProbe } from '../../src/scheduler/memory.estimator';
import { ModelStoreRepository } from '../../src/models/model-store.repository';
import { ModelLifecycleService } from '../../src/models/model-lifecycle.service';
import { CreateProgress, ModelsService } from '../../src/models/models.service';
import { GenerationHooksRegistry } from '../../src/observability/generation-hooks';
import { FakeBinding } from './fake-binding';
import { TinyGgufOptions, writeTinyGguf } from './gguf-fixtures';
import { newModelCatalog } from './models-service';

/** A minimal `/api/generate` command for model `tiny` (prompt `Hi`, default options), stamped now. */
export function tinyGenerateCommand(): GenerateCommand {
  return { model: 'tiny', prompt: 'Hi', raw: false, options: {}, startedAt: process.hrtime.bigint() };
}

/** Services wired by hand (no Nest container) over a temporary store — immich's `newTestService` idea. */
export interface InferenceTestbed {
  config: DaemonConfig;
  dir: string;
  store: ModelStoreRepository;
  models: ModelsService;
  /** Copy/delete/prune; the scheduler follows its `deleted$` (as in the app). */
  lifecycle: ModelLifecycleService;
  binding: FakeBinding;
  scheduler: SchedulerService;
  generate: GenerateService;
  chat: ChatService;
  embed: EmbedService;
  /** Writes a tiny GGUF and creates `name` from it with the extra Modelfile lines; returns the progress. */
  createModel(name: string, modelfileBody?: string, gguf?: TinyGgufOptions): Promise<CreateProgress[]>;
  close(): Promise<void>;
}

let ggufCounter = 0;

/** Builds the testbed; logging is silenced. */
export async function createInferenceTestbed(
  options: {
    config?: Partial<DaemonConfig>;
    binding?: FakeBinding;
    runnerFactory?: RunnerFactory;
    /** The scheduler's memory probe (default SystemMemoryProbe). */
    memory?: MemoryProbe;
    /** The request hooks registry the completion and embed services report to. */
    hooks?: GenerationHooksRegistry;
  } = {},
): Promise<InferenceTestbed> {
  Logger.overrideLogger(false);
  const dir = await mkdtemp(join(tmpdir(), 'llamad-unit-'));
  const config = Object.assign(new DaemonConfig(), { modelsDir: join(dir, 'models'), logging: false }, options.config);
  const store = new ModelStoreRepository(config);
  const { models, lifecycle } = newModelCatalog(store);
  const binding = options.binding ?? new FakeBinding();
  const factory = options.runnerFactory ?? new LlamaRunnerFactory(() => binding);
  const scheduler = new SchedulerService(config, factory, options.memory, lifecycle);
  scheduler.onModuleInit();
  const prompts = new PromptService();
  const completion = new CompletionService(config, scheduler, prompts, options.hooks);
  const generate = new GenerateService(models, completion, scheduler);
  const chat = new ChatService(models, completion, scheduler, prompts);
  const embed = new EmbedService(models, completion, scheduler, options.hooks);
  return {
    config,
    dir,
    store,
    models,
    lifecycle,
    binding,
    scheduler,
    generate,
    chat,
    embed,
    async createModel(name, modelfileBody = '', gguf = { chatTemplate: '{{ chatml }}' }) {
      const path = join(dir, `model-${ggufCounter++}.gguf`);
      await writeTinyGguf(path, gguf);
      const plan = await models.prepareCreate({ model: name, modelfile: `FROM ${path}\n${modelfileBody}` });
      return lastValueFrom(models.create(plan).pipe(toArray()));
    },
    async close() {
      await scheduler.onApplicationShutdown();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
