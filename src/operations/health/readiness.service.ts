import { Inject, Injectable, Optional } from '@nestjs/common';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { dirname } from 'node:path';
import { errnoText, isSystemError, redactServerPaths } from '../../common/http';
import { DaemonConfig } from '../../config';
import { NATIVE_BINDING, type NativeBindingLoader } from '../../native';
import { GracefulShutdownService } from '../shutdown/graceful-shutdown.service';

/** The outcome of a readiness check: ready, or the first reason it is not (no server path in it). */
export type Readiness = { ready: true } | { ready: false; reason: string };

/** The readiness reason while the daemon drains for shutdown (GET /ready: 503 `{"error":"shutting down"}`). */
export const SHUTTING_DOWN_REASON = 'shutting down';

/**
 * What GET /ready checks: not draining for shutdown (from the signal on, so that a load balancer stops sending
 * requests during LLAMAD_DRAIN_DELAY: docs/deploy.md "Several replicas"), the model store directory can be read (or, when it does not exist yet, created: its
 * nearest existing parent is writable), and the native addon loads (through the NATIVE_BINDING loader, which loads it
 * once per process and caches it).
 */
@Injectable()
export class ReadinessService {
  constructor(
    private readonly config: DaemonConfig,
    @Inject(NATIVE_BINDING) private readonly loadBinding: NativeBindingLoader,
    @Optional() private readonly shutdown?: GracefulShutdownService,
  ) {}

  /** Runs the checks in order; never throws. */
  async check(): Promise<Readiness> {
    if (this.shutdown?.isDraining()) return { ready: false, reason: SHUTTING_DOWN_REASON };
    const store = await this.checkStore(this.config.modelsDir);
    if (store) return { ready: false, reason: `model store: ${store}` };
    try {
      this.loadBinding();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return { ready: false, reason: `native addon: ${redactServerPaths(message)}` };
    }
    return { ready: true };
  }

  /** Why the store directory is unusable, or undefined when it is fine. */
  private async checkStore(dir: string): Promise<string | undefined> {
    try {
      await access(dir, constants.R_OK | constants.X_OK);
      return undefined;
    } catch (err) {
      if (!isSystemError(err) || err.code !== 'ENOENT') return describe(err);
    }
    // Not created yet (a fresh install): fine when the nearest existing parent lets us create it.
    for (let parent = dirname(dir); ; parent = dirname(parent)) {
      try {
        await access(parent, constants.W_OK | constants.X_OK);
        return undefined;
      } catch (err) {
        if (!isSystemError(err) || err.code !== 'ENOENT' || dirname(parent) === parent) {
          return `cannot be created: ${describe(err)}`;
        }
      }
    }
  }
}

function describe(err: unknown): string {
  if (isSystemError(err)) return errnoText(err.code);
  return redactServerPaths(err instanceof Error ? err.message : String(err));
}
