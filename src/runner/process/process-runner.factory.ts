import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { RunnerTerminatedError } from '../../common/errors';
import type { RunnerFault } from '../../config';
import { NATIVE_BINDING, NativeBindingLoader } from '../../native';
import type { Runner, RunnerCreateOptions, RunnerFactory, RunnerSpec } from '../runner';
import { CgroupPaths } from '../../common/system';
import { OomKillCounter } from './oom-kills';
import { ProcessRunner, ProcessRunnerOptions } from './process.runner';

/** Early deaths (at load or before the first output) within this window count towards the crash-loop rule, ms. */
export const CRASH_WINDOW_MS = 60_000;
/** This many early deaths within CRASH_WINDOW_MS put a model in back-off. */
export const CRASH_LIMIT = 3;
/** How long a model in back-off answers its last error at once instead of starting a runner, ms. */
export const CRASH_BACKOFF_MS = 60_000;

/** Test seams of the factory, and its watchdog settings (DaemonConfig: loadTimeoutMs, runnerHeartbeatTimeoutMs). */
export type ProcessRunnerFactoryOptions = Partial<
  Pick<ProcessRunnerOptions, 'childPath' | 'childArgs' | 'closeTimeoutMs' | 'loadTimeoutMs' | 'heartbeatTimeoutMs'>
> & {
  /** The clock (ms), for the crash-loop window. */
  now?: () => number;
  /** Where cgroup v2 and procfs are mounted, for the OOM-kill counter (default /sys/fs/cgroup, /proc). */
  cgroup?: CgroupPaths;
  /**
   * LLAMAD_TEST_RUNNER_FAULT: model name (the runner's label) → the fault that the first runner process started for it
   * simulates (later ones run normally, so a test sees the reload work).
   */
  faults?: Record<string, RunnerFault>;
};

/** DI token of the ProcessRunnerFactory's test seams (fake child, clock). */
export const PROCESS_RUNNER_OPTIONS = Symbol('PROCESS_RUNNER_OPTIONS');

interface CrashHistory {
  /** When the early deaths happened, ms. */
  at: number[];
  /** Until when the model is refused, ms (0 = not in back-off). */
  blockedUntil: number;
  /** The last death, answered while in back-off. */
  last?: RunnerTerminatedError;
}

/**
 * The daemon's default RunnerFactory (LLAMAD_RUNNER=process): each load starts its own runner process
 * (ProcessRunner, runner-child.ts), so a model that aborts llama.cpp takes only its own requests down.
 * Crash-loop rule: a model whose runner died at load or before its first output CRASH_LIMIT times within
 * CRASH_WINDOW_MS is refused for CRASH_BACKOFF_MS — create() rejects at once with the last RunnerTerminatedError
 * instead of starting a process (no respawn storm). The child's stderr is logged line by line under
 * `runner <model>`.
 */
@Injectable()
export class ProcessRunnerFactory implements RunnerFactory {
  private readonly logger = new Logger(ProcessRunnerFactory.name);
  private readonly crashes = new Map<string, CrashHistory>();
  private readonly now: () => number;
  /** The daemon's OOM-kill counter: a runner SIGKILLed by the OOM killer dies with cause `oom`. */
  private readonly oomKills: OomKillCounter;
  /** Faults not used yet (ProcessRunnerFactoryOptions.faults). */
  private readonly faults: Map<string, RunnerFault>;

  constructor(
    @Inject(NATIVE_BINDING) private readonly loadBinding: NativeBindingLoader,
    @Optional() @Inject(PROCESS_RUNNER_OPTIONS) private readonly seams: ProcessRunnerFactoryOptions = {},
  ) {
    this.now = seams.now ?? Date.now;
    this.oomKills = OomKillCounter.at(seams.cgroup ?? {});
    this.faults = new Map(Object.entries(seams.faults ?? {}));
  }

  /**
   * Starts a runner process for `spec` and loads the model in it.
   * @throws RunnerTerminatedError when the process died while loading, or at once while the model is in back-off;
   *   ModelLoadError / InsufficientMemoryError as the child reports them.
   */
  async create(spec: RunnerSpec, options: RunnerCreateOptions = {}): Promise<Runner> {
    const key = spec.modelPath;
    const history = this.crashes.get(key);
    if (history && history.blockedUntil > this.now() && history.last) {
      throw new RunnerTerminatedError(history.last.reason);
    }
    const label = options.modelName ?? key;
    const log = new Logger(`runner ${label}`);
    const started = Date.now();
    let runner: ProcessRunner;
    try {
      const { cgroup: _cgroup, now: _now, faults: _all, ...seams } = this.seams;
      const fault = this.faults.get(label);
      this.faults.delete(label);
      runner = await ProcessRunner.start(spec, {
        ...seams,
        oomKills: this.oomKills,
        ...(fault ? { fault } : {}),
        label,
        ...(options.threads !== undefined ? { threads: options.threads } : {}),
        binding: this.loadBinding,
        log: (line) => log.log(line),
      });
    } catch (err) {
      if (err instanceof RunnerTerminatedError) this.recordEarlyDeath(key, err);
      throw err;
    }
    this.logger.log(
      `loaded ${key} in runner process ${runner.pid} (num_ctx ${spec.numCtx}${spec.kvUnified ? ' shared by' : ' ×'} ` +
        `${spec.numParallel} slots) in ` +
        `${Date.now() - started} ms`,
    );
    runner.onDeath((death) => {
      this.logger.error(`runner process ${runner.pid} of ${label} terminated: ${death.reason}`);
      if (runner.diedEarly()) this.recordEarlyDeath(key, new RunnerTerminatedError(death.reason));
    });
    return runner;
  }

  private recordEarlyDeath(key: string, error: RunnerTerminatedError): void {
    const now = this.now();
    const history = this.crashes.get(key) ?? { at: [], blockedUntil: 0 };
    history.at = [...history.at.filter((t) => now - t < CRASH_WINDOW_MS), now];
    history.last = error;
    if (history.at.length >= CRASH_LIMIT) {
      history.blockedUntil = now + CRASH_BACKOFF_MS;
      history.at = [];
      this.logger.warn(`${key}: runner died ${CRASH_LIMIT} times within a minute; refusing it for 60 s`);
    }
    this.crashes.set(key, history);
  }
}
