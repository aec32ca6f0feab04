// Settings: changes and the reset to defaults, checked against the chosen model (settings-rules.ts) before
// anything is stored; every stored change is announced from one place (announceSettingsChanges), and the
// documents compressed with other settings show as stale at once.
import type { Settings, SettingsPatch } from '../api/contract.ts';
import type { EventBus } from '../api/dispatcher.ts';
import type { Storage } from '../storage/index.ts';
import type { DocumentLibrary } from './documents/library.ts';
import type { ModelsService } from './models-service.ts';
import { patchFields, refuseProblems, settingsProblems, type ModelLimits } from './settings-rules.ts';

export class SettingsService {
  constructor(
    private readonly storage: Storage,
    private readonly models: ModelsService,
  ) {}

  get(): Settings {
    return this.storage.settings.get();
  }

  /** Refused (INVALID_SETTING, details.field) when a value the patch sets cannot work with the model; a new
   * model is checked against every setting. */
  async update(patch: SettingsPatch): Promise<Settings> {
    if (patch.modelId) await this.requireModel(patch.modelId);
    const next = this.storage.settings.merged(patch);
    const fields = patch.modelId !== undefined ? null : patchFields(patch);
    refuseProblems(settingsProblems(next, await this.limits(next.modelId)), fields);
    return this.storage.settings.update(patch);
  }

  /** Every setting to its default; the model and the model folders stay. */
  async reset(): Promise<Settings> {
    return this.storage.settings.reset();
  }

  /** A model id the library knows (models.list, after a rescan); else INVALID_SETTING naming the field. */
  private async requireModel(modelId: string): Promise<void> {
    try {
      await this.models.get(modelId);
    } catch {
      refuseProblems(
        [
          {
            field: 'modelId',
            message: `no model has the id '${modelId.slice(0, 128)}': choose one that models.list names (the Models page)`,
          },
        ],
        null,
      );
    }
  }

  /** The chosen model's limits; null when none is chosen or it is no longer on disk (nothing to check against). */
  private async limits(modelId: string | null): Promise<ModelLimits | null> {
    if (!modelId) return null;
    try {
      const m = await this.models.get(modelId);
      return { name: m.name, contextLength: m.contextLength };
    } catch {
      return null;
    }
  }
}

/**
 * Announces every stored change of the settings, whoever made it (settings.update and reset, a model chosen,
 * a recompress with other options), and announces the documents again when a setting their cache depends on
 * changed (cacheMatches: the model, the compression, the system prompt), so that they show as stale, or as
 * ready again, at once. Returns the unsubscribe.
 */
export function announceSettingsChanges(storage: Storage, documents: DocumentLibrary, bus: EventBus): () => void {
  return storage.settings.onChange((after, before) => {
    bus.emit('settings.changed', after);
    if (
      before.modelId !== after.modelId ||
      JSON.stringify(before.compression) !== JSON.stringify(after.compression) ||
      before.systemPrompt !== after.systemPrompt
    )
      for (const d of storage.documents.list()) documents.changed(d.id);
  });
}
