// The models services: GGUF headers, discovery of models already on disk, downloads, the curated
// catalog and the memory estimate. Plain TypeScript, no Electron.
export * from './gguf-header.ts';
export * from './discovery.ts';
export * from './download.ts';
export * from './catalog.ts';
export * from './estimate.ts';
