export * from './llamad-health.indicator';
