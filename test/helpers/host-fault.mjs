// Preloaded into a real engine host by test/engine-recovery.test.ts (NODE_OPTIONS=--import): SIGUSR2 makes
// the host's JavaScript throw, as a bug in it would, at a moment the test chooses.
process.on('SIGUSR2', () => {
  throw new Error('a fault injected by the test');
});
