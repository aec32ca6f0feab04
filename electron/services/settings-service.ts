// Settings: changes and the reset to defaults, checked against the chosen model (settings-rules.ts) before
// anything is stored, then announced; documents compressed with other settings show as stale at once.
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
    private readonly documents: DocumentLibrary,
    private readonly bus: EventBus,
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
    return this.store(() => this.storage.settings.update(patch));
  }

  /** Every setting to its default; the model and the model folders stay. */
  async reset(): Promise<Settings> {
    return this.store(() => this.storage.settings.reset());
  }

  private store(write: () => Settings): Settings {
    const before = this.storage.settings.get();
    const s = write();
    this.bus.emit('settings.changed', s);
    // Documents compressed with other settings show as stale now.
    if (
      before.modelId !== s.modelId ||
      JSON.stringify(before.compression) !== JSON.stringify(s.compression) ||
      before.systemPrompt !== s.systemPrompt
    )
      for (const d of this.storage.documents.list()) this.documents.changed(d.id);
    return s;
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
