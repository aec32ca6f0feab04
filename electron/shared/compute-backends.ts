// The compute backends by the names sessions, the command line and the settings take (the engine's
// backend_name and the GPU libraries' kinds, native/src/backend/gpu-loader.h). No Node imports: the
// renderer reads it through the API contract.
export const COMPUTE_BACKENDS = ['cpu', 'cuda', 'vulkan'] as const;
export type ComputeBackend = (typeof COMPUTE_BACKENDS)[number];
export type GpuBackend = Exclude<ComputeBackend, 'cpu'>;
/** The states of the engine process, as the engine client and the API's EngineStatus have them. */
export const ENGINE_STATES = ['stopped', 'starting', 'ready', 'busy', 'crashed'] as const;
export type EngineState = (typeof ENGINE_STATES)[number];

/** What a session, the command line or the settings may ask for: one by name, or the engine's choice. */
export const BACKEND_CHOICES = ['auto', ...COMPUTE_BACKENDS] as const;
export type BackendChoice = (typeof BACKEND_CHOICES)[number];
