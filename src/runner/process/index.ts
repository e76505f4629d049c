export * from './exit-reason';
export * from './protocol';
export * from './process.runner';
export * from './process-runner.factory';
export * from './default-runner.factory';
export * from './oom-kills';
