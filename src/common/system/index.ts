export * from './cgroup';
