// Models on disk (models.list / models.changed), the catalog, memory estimates and choosing the chat model.
import { create } from 'zustand';

import type { CatalogEntry, MemoryEstimate, ModelEntry } from '../../../electron/api/contract.ts';
import { api, errorCode, errorMessage } from '../api/client.ts';
import { setEngineStatus } from './engine.ts';
import { registerTask } from './tasks.ts';
import { notify } from './ui.ts';

export interface ModelsState {
  list: ModelEntry[];
  loaded: boolean;
  scanning: boolean;
  catalog: CatalogEntry[];
  estimates: Record<string, MemoryEstimate | { error: string }>;
  /** The model being loaded by models.select. */
  selecting: string | null;
  selectError: Record<string, string>;
}

const initial: ModelsState = {
  list: [],
  loaded: false,
  scanning: false,
  catalog: [],
  estimates: {},
  selecting: null,
  selectError: {},
};
export const useModels = create<ModelsState>()(() => ({ ...initial }));

export function resetModels(): void {
  useModels.setState({ ...initial }, true);
}

export function setModels(list: ModelEntry[]): void {
  useModels.setState({ list, loaded: true });
}

export async function loadModels(): Promise<void> {
  try {
    setModels(await api().call('models.list', {}));
  } catch (e) {
    notify(`Could not list the models: ${errorMessage(e)}`);
  }
}

export async function rescanModels(): Promise<void> {
  useModels.setState({ scanning: true });
  try {
    setModels(await api().call('models.rescan', {}));
  } catch (e) {
    notify(`Could not search for models: ${errorMessage(e)}`);
  } finally {
    useModels.setState({ scanning: false });
  }
}

export async function addModel(path: string): Promise<ModelEntry | null> {
  try {
    const m = await api().call('models.add', { path });
    await loadModels();
    return m;
  } catch (e) {
    notify(`The model was not added: ${errorMessage(e)}`);
    return null;
  }
}

export async function loadCatalog(): Promise<void> {
  try {
    useModels.setState({ catalog: await api().call('models.catalog', {}) });
  } catch (e) {
    notify(`Could not load the catalog: ${errorMessage(e)}`);
  }
}

export async function downloadModel(source: { url: string } | { catalogId: string }, label: string): Promise<boolean> {
  try {
    const { taskId } = await api().call('models.download', source);
    registerTask(taskId, 'download', null, label);
    return true;
  } catch (e) {
    // The user said no in the desktop's confirmation dialog: nothing to report.
    if (errorCode(e) === 'CANCELLED') return false;
    notify(`The download did not start: ${errorMessage(e)}`);
    return false;
  }
}

export async function estimateModel(modelId: string): Promise<void> {
  try {
    const e = await api().call('models.estimate', { modelId });
    useModels.setState((s) => ({ estimates: { ...s.estimates, [modelId]: e } }));
  } catch (e) {
    useModels.setState((s) => ({ estimates: { ...s.estimates, [modelId]: { error: errorMessage(e) } } }));
  }
}

/** Loads a model and makes it the chat model (the core checks the memory first and refuses plainly). */
export async function selectModel(modelId: string): Promise<boolean> {
  useModels.setState((s) => {
    const selectError = { ...s.selectError };
    delete selectError[modelId];
    return { selecting: modelId, selectError };
  });
  try {
    setEngineStatus(await api().call('models.select', { modelId }));
    return true;
  } catch (e) {
    useModels.setState((s) => ({ selectError: { ...s.selectError, [modelId]: errorMessage(e) } }));
    return false;
  } finally {
    useModels.setState({ selecting: null });
  }
}
