import { ModelLoadError } from '../../common/errors';
import { isCompiledAddon, NativeBindingLoader } from '../../native';
import { LlamaRunnerFactory } from '../llama-runner.factory';
import type { Runner, RunnerCreateOptions, RunnerFactory, RunnerSpec } from '../runner';
import { ProcessRunnerFactory, ProcessRunnerFactoryOptions } from './process-runner.factory';

/**
 * The default RUNNER_FACTORY of LlamadModule: picks where each model runs when it loads.
 * - `process` (LLAMAD_RUNNER unset or `process`; config.runner): a runner process per model (ProcessRunnerFactory)
 *   when the NATIVE_BINDING loader gives the compiled addon — the child loads that same addon file;
 * - otherwise in-process (LlamaRunnerFactory): `inprocess` was asked for, or the host's NATIVE_BINDING is a
 *   stand-in (an in-memory object such as a test FakeBinding cannot be carried into another process).
 * The addon is loaded on the first create(), never at bootstrap.
 * @throws what the chosen factory throws (ModelLoadError when the addon cannot be loaded).
 */
export class DefaultRunnerFactory implements RunnerFactory {
  private readonly inProcess: LlamaRunnerFactory;
  private readonly perProcess: ProcessRunnerFactory;

  /**
   * @param watchdogs the runner processes' watchdog settings and test faults (DaemonConfig loadTimeoutMs,
   *   runnerHeartbeatTimeoutMs, runnerFaults); absent: the defaults (5 min each, no faults).
   */
  constructor(
    private readonly mode: 'process' | 'inprocess',
    private readonly loadBinding: NativeBindingLoader,
    watchdogs: Pick<ProcessRunnerFactoryOptions, 'loadTimeoutMs' | 'heartbeatTimeoutMs' | 'faults'> = {},
  ) {
    this.inProcess = new LlamaRunnerFactory(loadBinding);
    this.perProcess = new ProcessRunnerFactory(loadBinding, watchdogs);
  }

  /** Which runner a load would use now ('process' or 'inprocess'). */
  resolvedMode(): 'process' | 'inprocess' {
    if (this.mode === 'inprocess') return 'inprocess';
    try {
      return isCompiledAddon(this.loadBinding()) ? 'process' : 'inprocess';
    } catch {
      return 'inprocess';
    }
  }

  create(spec: RunnerSpec, options?: RunnerCreateOptions): Promise<Runner> {
    if (this.mode === 'process') {
      try {
        if (isCompiledAddon(this.loadBinding())) return this.perProcess.create(spec, options);
      } catch (err) {
        return Promise.reject(new ModelLoadError((err as Error).message, { cause: err }));
      }
    }
    return this.inProcess.create(spec, options);
  }
}
