// Settings: one JSON document (the contract's Settings) in a one-row table, over defaults. The model
// folders live in model_folders (one source of truth, shared with the models repository); the settings
// document shows them as Settings.modelFolders.
import { SHIPPED_OCR_LANGUAGE } from '../shared/ocr.ts';
import type Database from 'better-sqlite3';
import type { z } from 'zod';

import { CompressionSettings, SamplingSettings, Settings, type SettingsPatch } from '../api/contract.ts';
import { RECOMMENDED_METHOD } from '../shared/kv/methods.ts';
import { COMPRESS_DEFAULTS } from '../shared/kv/options.ts';
import { isoTime, type Scheduler } from './clock.ts';
import { StorageError } from './errors.ts';
import type { ModelsRepo } from './models.ts';
import { writeTransaction } from './transaction.ts';

// Short on purpose: it is read with every document and takes room in the context.
export const DEFAULT_SYSTEM_PROMPT = 'Answer from the document and name the pages you used.';

export const DEFAULT_SETTINGS: Settings = Object.freeze({
  modelId: null,
  compression: Object.freeze({
    method: RECOMMENDED_METHOD,
    budget: 0.2,
    alpha: COMPRESS_DEFAULTS.alpha,
    window: COMPRESS_DEFAULTS.window,
    kernel: COMPRESS_DEFAULTS.kernel,
    positions: 'auto',
  }),
  sampling: Object.freeze({
    temperature: 0.7,
    topK: 40,
    topP: 0.95,
    minP: 0.05,
    repeatPenalty: 1.1,
    maxTokens: 512,
    seed: null,
  }),
  systemPrompt: DEFAULT_SYSTEM_PROMPT,
  nCtx: null,
  conversationRoom: null,
  threads: null,
  kvType: 'f16',
  kvTypeV: null,
  kvRotate: true,
  backend: 'auto',
  theme: 'system',
  modelFolders: Object.freeze([]) as unknown as string[],
  ocrLanguages: Object.freeze([SHIPPED_OCR_LANGUAGE]) as unknown as string[],
}) as Settings;

/** The patch the repository accepts: the contract's SettingsPatch, refusing unknown keys at every level. */
export const StrictSettingsPatch = Settings.partial()
  .extend({
    compression: CompressionSettings.partial().strict().optional(),
    sampling: SamplingSettings.partial().strict().optional(),
  })
  .strict();

type Stored = Omit<Settings, 'modelFolders'>;
const NESTED = { compression: CompressionSettings, sampling: SamplingSettings } as const;

function copyDefaults(): Settings {
  return {
    ...DEFAULT_SETTINGS,
    compression: { ...DEFAULT_SETTINGS.compression },
    sampling: { ...DEFAULT_SETTINGS.sampling },
    modelFolders: [],
    ocrLanguages: [...DEFAULT_SETTINGS.ocrLanguages],
  };
}

function issueText(error: z.ZodError, prefix: string): string {
  const issue = error.issues[0];
  const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
  return `${path ? path + ': ' : ''}${issue.message}`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface SettingsRead {
  settings: Settings;
  /** Stored fields that no longer validate (e.g. written by another version) and were read as defaults. */
  ignored: string[];
}

/** Told of every stored change of the settings, with the settings before and after it. */
export type SettingsListener = (after: Settings, before: Settings) => void;

export class SettingsRepo {
  private readonly selectRow;
  private readonly upsertRow;
  private readonly listeners = new Set<SettingsListener>();

  constructor(
    private readonly db: Database.Database,
    private readonly scheduler: Scheduler,
    private readonly models: ModelsRepo,
  ) {
    this.selectRow = db.prepare(`SELECT json FROM settings WHERE id = 1`);
    this.upsertRow = db.prepare(
      `INSERT INTO settings (id, json, updated_at) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET json = excluded.json, updated_at = excluded.updated_at`,
    );
  }

  get(): Settings {
    return this.read().settings;
  }

  /** The stored settings over the defaults, field by field: a field that fails validation reads as its default. */
  read(): SettingsRead {
    const out = copyDefaults();
    const ignored: string[] = [];
    const row = this.selectRow.get() as { json: string } | undefined;
    if (row) {
      let stored: unknown;
      try {
        stored = JSON.parse(row.json);
      } catch {
        stored = null;
      }
      if (!isRecord(stored)) {
        ignored.push('(all: the stored settings are not a JSON object)');
      } else {
        const target = out as unknown as Record<string, unknown>;
        for (const key of Object.keys(Settings.shape) as (keyof Settings)[]) {
          if (key === 'modelFolders' || !(key in stored)) continue;
          if (key === 'compression' || key === 'sampling') {
            const value = stored[key];
            if (!isRecord(value)) {
              ignored.push(key);
              continue;
            }
            const shape = NESTED[key].shape as Record<string, z.ZodType>;
            const nested = target[key] as Record<string, unknown>;
            for (const sub of Object.keys(shape)) {
              if (!(sub in value)) continue;
              const r = shape[sub].safeParse(value[sub]);
              if (r.success) nested[sub] = r.data;
              else ignored.push(`${key}.${sub}`);
            }
          } else {
            const r = (Settings.shape[key] as z.ZodType).safeParse(stored[key]);
            if (r.success) target[key] = r.data;
            else ignored.push(key);
          }
        }
      }
    }
    out.modelFolders = this.models.folders();
    return { settings: Settings.parse(out), ignored };
  }

  /**
   * Applies a partial update (nested objects merge field by field) and returns the new settings. A patch
   * that fails validation, alone or merged, throws StorageError BAD_REQUEST and changes nothing.
   */
  update(patch: SettingsPatch | unknown): Settings {
    const before = this.get();
    const next = this.merged(patch);
    writeTransaction(this.db, () => {
      const { modelFolders, ...stored } = next;
      this.upsertRow.run(JSON.stringify(stored satisfies Stored), isoTime(this.scheduler));
      if ((patch as SettingsPatch).modelFolders !== undefined) this.models.setFolders(modelFolders);
    });
    return this.changed(before);
  }

  /** Every setting to its default but the model and the model folders (kept: they say what is on this machine). */
  reset(): Settings {
    const before = this.get();
    const { modelFolders: _folders, ...stored } = { ...copyDefaults(), modelId: before.modelId };
    this.upsertRow.run(JSON.stringify(stored satisfies Stored), isoTime(this.scheduler));
    return this.changed(before);
  }

  /**
   * Calls `listener` after every write that changed the settings, whoever wrote them (the settings page, a
   * model chosen, a recompress with other options): the one place a change is announced from.
   */
  onChange(listener: SettingsListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(before: Settings): Settings {
    const after = this.get();
    if (JSON.stringify(after) !== JSON.stringify(before)) for (const l of this.listeners) l(after, before);
    return after;
  }

  /** The settings a patch would make, checked, without storing them (throws as update does). */
  merged(patch: SettingsPatch | unknown): Settings {
    const parsed = StrictSettingsPatch.safeParse(patch);
    if (!parsed.success)
      throw new StorageError('BAD_REQUEST', `settings: ${issueText(parsed.error, '')}`, parsed.error.issues);
    const p = parsed.data;
    const current = this.get();
    const merged: Record<string, unknown> = { ...current };
    for (const [key, value] of Object.entries(p)) {
      if (value === undefined) continue;
      merged[key] =
        key === 'compression' || key === 'sampling'
          ? { ...(current[key] as object), ...dropUndefined(value as object) }
          : value;
    }
    const checked = Settings.safeParse(merged);
    if (!checked.success)
      throw new StorageError('BAD_REQUEST', `settings: ${issueText(checked.error, '')}`, checked.error.issues);
    return checked.data;
  }
}

function dropUndefined(o: object): object {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
