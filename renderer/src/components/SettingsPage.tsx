// Settings: compression (method, budget, alpha, window, pooling kernel, pyramid steepness), sampling, the system prompt,
// context and engine, appearance (the theme applies at once), and extra model folders. Edits are a draft
// until saved; what would make compressed documents stale says so.
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';

import type {
  CompressionMethod,
  DocumentPositions,
  Result,
  Settings,
  SettingsPatch,
} from '../../../electron/api/contract.ts';
import { api, hasApi } from '../api/client.ts';
import { resetSettings, updateSettings, useSettings } from '../stores/settings.ts';
import { askConfirm, notify } from '../stores/ui.ts';
import { explain } from './Term.tsx';
import { GLOSSARY } from '../lib/glossary.ts';
import { methodParams } from '../../../electron/shared/kv/methods.ts';
import { BASE_MODEL_MAX_TOKENS } from '../../../electron/shared/chat-style.ts';
import { ApiAccess } from './ApiAccess.tsx';
import { Segmented } from './Segmented.tsx';
import { METHOD_CHOICES } from '../lib/method-label.ts';
import { MethodSelect } from './MethodSelect.tsx';
import { BudgetValue, DEFAULT_BETA } from '../../../electron/shared/kv/budget.ts';
import { compressRow, type OptionRow, samplingRow } from '../../../electron/shared/kv/options.ts';
import { KV_PRESETS, presetKey, quantized } from '../../../electron/shared/kv/precision.ts';

/** The draft of the form: numbers as the user types them. */
interface Draft {
  method: CompressionMethod;
  budget: string;
  alpha: string;
  window: string;
  kernel: string;
  beta: string;
  positions: DocumentPositions;
  temperature: string;
  topK: string;
  topP: string;
  minP: string;
  repeatPenalty: string;
  maxTokens: string;
  seed: string;
  systemPrompt: string;
  nCtx: string;
  conversationRoom: string;
  threads: string;
  /** The cache precision preset (precision.ts presetKey: 'f16', 'q8_0/q4_0', ...). */
  kvPreset: string;
  kvRotate: boolean;
  backend: Settings['backend'];
}

/** Where a compressed document sits in the context (the contract's DocumentPositions), as the page names it. */
const POSITIONS_LABELS: Record<DocumentPositions, string> = {
  auto: 'Automatic: packed when the document would leave the conversation too little room',
  own: 'The document’s own positions (citations, best answers)',
  packed: 'Packed: only the kept entries’ positions (more room to talk)',
};

/** The settings' backend choices as the page names them (a Record: a choice added to the contract must be named). */
const BACKEND_LABELS: Record<Settings['backend'], string> = {
  auto: 'Automatic',
  cpu: 'CPU',
  cuda: 'NVIDIA GPU (CUDA)',
  vulkan: 'GPU through Vulkan (AMD, Intel, Apple)',
};

function draftOf(s: Settings): Draft {
  const c = s.compression,
    p = s.sampling;
  return {
    method: c.method,
    budget: String(c.budget),
    alpha: String(c.alpha),
    window: String(c.window),
    kernel: String(c.kernel),
    beta: c.beta === undefined ? '' : String(c.beta),
    positions: c.positions ?? 'auto',
    temperature: String(p.temperature),
    topK: String(p.topK),
    topP: String(p.topP),
    minP: String(p.minP),
    repeatPenalty: String(p.repeatPenalty),
    maxTokens: String(p.maxTokens),
    seed: p.seed === null ? '' : String(p.seed),
    systemPrompt: s.systemPrompt,
    nCtx: s.nCtx === null ? '' : String(s.nCtx),
    conversationRoom: s.conversationRoom === null ? '' : String(s.conversationRoom),
    threads: s.threads === null ? '' : String(s.threads),
    kvPreset: presetKey({ k: s.kvType, v: s.kvTypeV ?? s.kvType }),
    kvRotate: s.kvRotate,
    backend: s.backend,
  };
}

/**
 * Checks a draft; returns the patch or the problems by field. `stored`: the saved compression settings, so that
 * clearing β (whose absence a patch cannot say) sends the engine's default instead of keeping the old value.
 */
export function patchOf(
  d: Draft,
  stored?: Settings['compression'],
): { patch: SettingsPatch; errors: Partial<Record<keyof Draft, string>> } {
  const errors: Partial<Record<keyof Draft, string>> = {};
  const num = (k: keyof Draft, min: number, max: number, int = false, optional = false): number | null => {
    const raw = String(d[k]).trim();
    if (raw === '' && optional) return null;
    const v = Number(raw);
    if (raw === '' || !Number.isFinite(v) || v < min || v > max || (int && !Number.isInteger(v))) {
      errors[k] = `${int ? 'a whole number' : 'a number'} from ${min} to ${max}`;
      return null;
    }
    return v;
  };
  // The engine's own bounds (shared/kv/options.ts), so that nothing accepted here is refused later.
  const option = (k: keyof Draft, row: OptionRow, optional = false) => {
    const v = num(k, row.min, row.max, row.integer, optional);
    if (v !== null && row.odd && v % 2 === 0) errors[k] = 'an odd number';
    return v;
  };
  const budget = num('budget', 0, compressRow('budget').max);
  if (budget !== null && !BudgetValue.safeParse(budget).success)
    errors.budget = 'a ratio above 0 up to 1, or a whole number of tokens';
  const alpha = option('alpha', compressRow('alpha'));
  const window = option('window', compressRow('window'));
  const kernel = option('kernel', compressRow('kernel'));
  const beta = option('beta', compressRow('beta'), true);
  const patch: SettingsPatch = {
    compression: {
      method: d.method,
      budget: budget ?? undefined,
      alpha: alpha ?? undefined,
      window: window ?? undefined,
      kernel: kernel ?? undefined,
      beta: beta ?? (stored?.beta !== undefined && !errors.beta ? DEFAULT_BETA : undefined),
      positions: d.positions,
    },
    sampling: {
      temperature: option('temperature', samplingRow('temperature')) ?? undefined,
      topK: option('topK', samplingRow('topK')) ?? undefined,
      topP: option('topP', samplingRow('topP')) ?? undefined,
      minP: option('minP', samplingRow('minP')) ?? undefined,
      repeatPenalty: option('repeatPenalty', samplingRow('repeatPenalty')) ?? undefined,
      maxTokens: num('maxTokens', 1, 1 << 20, true) ?? undefined,
      seed: option('seed', samplingRow('seed'), true),
    },
    systemPrompt: d.systemPrompt,
    nCtx: num('nCtx', 64, 1 << 22, true, true),
    conversationRoom: num('conversationRoom', 16, 1 << 20, true, true),
    threads: num('threads', 1, 1024, true, true),
    ...presetSettings(d.kvPreset),
    kvRotate: d.kvRotate,
    backend: d.backend,
  };
  return { patch, errors };
}

/** A preset's settings (the keys' type, the values' where they differ), and whether any of it is quantized. */
function presetSettings(key: string): Pick<Settings, 'kvType' | 'kvTypeV'> & { quantized: boolean } {
  const p = KV_PRESETS.find((x) => presetKey(x) === key) ?? KV_PRESETS[0];
  return { kvType: p.k, kvTypeV: p.v === p.k ? null : p.v, quantized: quantized(p.k) || quantized(p.v) };
}

function Field({
  id,
  label,
  hint,
  error,
  children,
}: {
  id: string;
  label: string;
  hint?: string;
  error?: string;
  children: ReactNode;
}) {
  return (
    <div className={`field${error ? ' invalid' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {children}
      {error ? (
        <span id={`${id}-msg`} className="field-error small" role="alert">
          {error}
        </span>
      ) : hint ? (
        <span id={`${id}-msg`} className="field-hint small muted">
          {hint}
        </span>
      ) : null}
    </div>
  );
}

export function ThemePicker() {
  const theme = useSettings((s) => s.settings?.theme ?? 'system');
  return (
    <Segmented
      label="Theme"
      name="theme"
      value={theme}
      onChange={(t) => void updateSettings({ theme: t })}
      options={[
        { value: 'system', label: 'System' },
        { value: 'light', label: 'Light' },
        { value: 'dark', label: 'Dark' },
      ]}
    />
  );
}

/** The languages OCR reads scans in: English (shipped) and the Tesseract models the user put in the library's
 * folder, each a checkbox; the folder named, since nothing is ever downloaded. */
function OcrLanguages() {
  const chosen = useSettings((s) => s.settings?.ocrLanguages ?? ['eng']);
  const [there, setThere] = useState<Result<'documents.ocrLanguages'> | null>(null);
  useEffect(() => {
    let alive = true;
    void api()
      .call('documents.ocrLanguages', {})
      .then(
        (r) => alive && setThere(r),
        () => {},
      );
    return () => {
      alive = false;
    };
  }, []);
  if (!there) return <span className="muted small">Looking for languages…</span>;
  const toggle = (code: string, on: boolean) => {
    const next = on ? [...chosen, code] : chosen.filter((c) => c !== code);
    if (next.length) void updateSettings({ ocrLanguages: next });
  };
  return (
    <div data-testid="ocr-languages">
      <div className="inline-row">
        {there.available.map((l) => (
          <label key={l.code} className="check-row">
            <input
              type="checkbox"
              checked={chosen.includes(l.code)}
              disabled={chosen.length === 1 && chosen.includes(l.code)}
              onChange={(e) => toggle(l.code, e.target.checked)}
            />{' '}
            {l.name}
            {l.shipped ? ' (shipped)' : ''}
          </label>
        ))}
      </div>
      <span className="field-hint small muted">
        More languages: put Tesseract models (<code>fra.traineddata</code>, from the tessdata repositories) in{' '}
        <code>{there.folder}</code>; each language chosen slows the reading of scans. Scans already imported keep what
        they were read with.
      </span>
    </div>
  );
}

function ModelFolders() {
  const folders = useSettings((s) => s.settings?.modelFolders ?? []);
  const [path, setPath] = useState('');
  // The desktop app searches only folders chosen in its folder dialog (its main process refuses typed ones).
  const shell = hasApi() ? api().shell : undefined;
  const add = (folder: string) => {
    if (!folders.includes(folder))
      void updateSettings({ modelFolders: [...folders, folder] }).then((ok) => ok && setPath(''));
  };
  return (
    <div>
      <ul className="folder-list">
        {folders.map((f) => (
          <li key={f}>
            <code>{f}</code>
            <button
              type="button"
              className="link-button"
              aria-label={`Remove ${f}`}
              onClick={() => void updateSettings({ modelFolders: folders.filter((x) => x !== f) })}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      {shell ? (
        <button
          type="button"
          className="button"
          onClick={() => void shell.openFileDialog('folder').then((p) => p[0] && add(p[0]))}
        >
          Choose a folder…
        </button>
      ) : (
        <form
          className="inline-row"
          onSubmit={(e) => {
            e.preventDefault();
            if (path.trim()) add(path.trim());
          }}
        >
          <label htmlFor="folder-path" className="sr-only">
            Folder to search for models
          </label>
          <input
            id="folder-path"
            type="text"
            placeholder="/path/to/models"
            value={path}
            onChange={(e) => setPath(e.target.value)}
            spellCheck={false}
          />
          <button type="submit" className="button" disabled={!path.trim()}>
            Add folder
          </button>
        </form>
      )}
    </div>
  );
}

export function SettingsPage() {
  const settings = useSettings((s) => s.settings);
  const saving = useSettings((s) => s.saving);
  const [draft, setDraft] = useState<Draft | null>(settings ? draftOf(settings) : null);
  const [errors, setErrors] = useState<Partial<Record<keyof Draft, string>>>({});
  // Values the core refused for the model (settings-rules.ts), with its reason, until the field changes.
  const [refused, setRefused] = useState<Partial<Record<keyof Draft, string>>>({});
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (settings && !draft) setDraft(draftOf(settings));
  }, [settings, draft]);
  if (!settings || !draft) return <div className="pane-pad muted">Loading the settings…</div>;
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => {
    setDraft({ ...draft, [k]: v });
    setSaved(false);
    if (refused[k]) setRefused({ ...refused, [k]: undefined });
  };
  // Only the settings the chosen method reads (methods.ts, methodParams).
  const params = methodParams(draft.method);
  const problem = (k: keyof Draft) => (errors[k] ? `Expected ${errors[k]}` : refused[k]);
  const text = (
    k: keyof Draft,
    label: string,
    hint?: string,
    o: { inputMode?: 'decimal' | 'numeric'; placeholder?: string } = {},
  ) => (
    <Field id={`set-${k}`} label={label} hint={hint} error={problem(k)}>
      <input
        id={`set-${k}`}
        type="text"
        inputMode={o.inputMode ?? 'decimal'}
        placeholder={o.placeholder}
        value={String(draft[k])}
        onChange={(e) => set(k, e.target.value as never)}
        aria-invalid={!!problem(k) || undefined}
        aria-describedby={`set-${k}-msg`}
      />
    </Field>
  );
  const dirty = JSON.stringify(draft) !== JSON.stringify(draftOf(settings));
  const compressionChanged = (['method', 'budget', 'alpha', 'window', 'kernel', 'beta', 'positions'] as const).some(
    (k) => String(draft[k]) !== String(draftOf(settings)[k]),
  );
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = patchOf(draft, settings.compression);
    setErrors(r.errors);
    if (Object.keys(r.errors).length) return;
    const ok = await updateSettings(r.patch, {
      // 'compression.window' is the draft's 'window'.
      onRefused: (x) => setRefused({ [x.field.split('.').pop() as keyof Draft]: x.message }),
    });
    if (ok) {
      setSaved(true);
      setRefused({});
      notify('Settings saved', 'success');
      const s = useSettings.getState().settings;
      if (s) setDraft(draftOf(s));
    }
  };
  const reset = () =>
    askConfirm({
      title: 'Reset every setting to its default?',
      body: 'Compression, answers, the system prompt, the context and the engine go back to their defaults; the model and the model folders stay. Documents compressed with other settings are compressed again when you next use them.',
      confirmLabel: 'Reset to defaults',
      danger: true,
      onConfirm: () =>
        void resetSettings().then((ok) => {
          const s = useSettings.getState().settings;
          if (ok && s) {
            setDraft(draftOf(s));
            setErrors({});
            setRefused({});
          }
        }),
    });
  return (
    <form className="settings-page" onSubmit={submit} noValidate>
      <section className="card" aria-labelledby="appearance-heading">
        <h3 id="appearance-heading">Appearance</h3>
        <div className="field">
          <span className="label-like" id="theme-label">
            Theme
          </span>
          <ThemePicker />
          <span className="field-hint small muted">System follows your computer’s light or dark setting.</span>
        </div>
      </section>
      <section className="card" aria-labelledby="compression-heading">
        <h3 id="compression-heading">Compression</h3>
        <Field id="set-method" label="Method" hint={METHOD_CHOICES.find((m) => m.value === draft.method)?.hint}>
          <MethodSelect
            id="set-method"
            value={draft.method}
            onChange={(m) => set('method', m)}
            describedBy="set-method-msg"
          />
        </Field>
        <div className="field-row">
          {draft.method !== 'full' && text('budget', GLOSSARY.budget.label, explain('budget'))}
          {params.alpha && text('alpha', GLOSSARY.alpha.label, explain('alpha'))}
          {params.window && text('window', GLOSSARY.window.label, explain('window'), { inputMode: 'numeric' })}
          {params.kernel && text('kernel', GLOSSARY.kernel.label, explain('kernel'), { inputMode: 'numeric' })}
          {params.beta &&
            text('beta', GLOSSARY.beta.label, `${explain('beta')} Empty: ${DEFAULT_BETA}.`, { inputMode: 'numeric' })}
        </div>
        {draft.method !== 'full' && (
          <Field
            id="set-positions"
            label="Document positions"
            hint="Compression frees memory, but a document still takes its own length in positions, which a small context runs out of. Packed, it takes only what it keeps: the conversation gets the rest; answers are somewhat less accurate, and their page chips come from shared words, not the model’s attention (docs/quality.md)."
          >
            <select
              id="set-positions"
              value={draft.positions}
              onChange={(e) => set('positions', e.target.value as DocumentPositions)}
              aria-describedby="set-positions-msg"
            >
              {(Object.keys(POSITIONS_LABELS) as DocumentPositions[]).map((p) => (
                <option key={p} value={p}>
                  {POSITIONS_LABELS[p]}
                </option>
              ))}
            </select>
          </Field>
        )}
        {compressionChanged && (
          <p className="notice small">
            Documents compressed with the old settings become stale and are compressed again when you next use them.
          </p>
        )}
      </section>
      <section className="card" aria-labelledby="sampling-heading">
        <h3 id="sampling-heading">Answers</h3>
        <div className="field-row">
          {text('temperature', 'Temperature', '0 = always the most likely word')}
          {text('topK', 'Top-k', '0 = off', { inputMode: 'numeric' })}
          {text('topP', 'Top-p')}
          {text('minP', 'Min-p')}
          {text('repeatPenalty', 'Repeat penalty')}
          {text(
            'maxTokens',
            'Longest answer (tokens)',
            `A base model's (no chat template, or a chat that continues text) at most ${BASE_MODEL_MAX_TOKENS}`,
            { inputMode: 'numeric' },
          )}
          {text('seed', 'Seed', 'Empty = random', { inputMode: 'numeric', placeholder: 'random' })}
        </div>
        <Field
          id="set-systemPrompt"
          label="System prompt"
          hint="Sent before the document; changing it means reading documents again."
        >
          <textarea
            id="set-systemPrompt"
            rows={4}
            value={draft.systemPrompt}
            onChange={(e) => set('systemPrompt', e.target.value)}
            aria-describedby="set-systemPrompt-msg"
          />
        </Field>
      </section>
      <section className="card" aria-labelledby="engine-heading">
        <h3 id="engine-heading">Engine</h3>
        <div className="field-row">
          {text(
            'nCtx',
            'Context cap',
            'A cap: each document gets a context sized to it, up to the model’s own and this. Empty = the model’s own',
            { inputMode: 'numeric', placeholder: 'model’s own' },
          )}
          {text(
            'conversationRoom',
            'Conversation room',
            'Positions kept free after a document for the conversation. Empty = 1,024, at most a quarter of the context',
            { inputMode: 'numeric', placeholder: 'default' },
          )}
          {text('threads', 'Threads', 'Empty = all cores', { inputMode: 'numeric', placeholder: 'all cores' })}
          <Field
            id="set-kvType"
            label="Cache precision"
            hint="How each kept key and value is stored, on top of what compression drops. Documents are read again after a change"
          >
            <select
              id="set-kvType"
              value={draft.kvPreset}
              onChange={(e) => set('kvPreset', e.target.value)}
              aria-describedby="set-kvType-msg"
            >
              {KV_PRESETS.map((p) => (
                <option key={presetKey(p)} value={presetKey(p)}>
                  {p.label}
                </option>
              ))}
            </select>
            <label className="check-row">
              <input
                type="checkbox"
                id="set-kvRotate"
                checked={draft.kvRotate}
                disabled={!presetSettings(draft.kvPreset).quantized}
                onChange={(e) => set('kvRotate', e.target.checked)}
              />{' '}
              Rotate before quantizing (spreads outliers; better answers at 8 and 4 bits)
            </label>
          </Field>
          <Field
            id="set-backend"
            label="Compute on"
            hint="Automatic: an NVIDIA GPU (CUDA), else a discrete GPU through Vulkan, else the CPU. Chats and reads started after a change use it; the status bar says why"
          >
            <select
              id="set-backend"
              value={draft.backend}
              onChange={(e) => set('backend', e.target.value as Settings['backend'])}
              aria-describedby="set-backend-msg"
            >
              {Object.entries(BACKEND_LABELS).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </Field>
        </div>
        <div className="field">
          <span className="label-like">Languages of scans (OCR)</span>
          <OcrLanguages />
        </div>
        <div className="field">
          <span className="label-like">Model folders</span>
          <ModelFolders />
          <span className="field-hint small muted">
            Searched for GGUF files besides LM Studio, Ollama and the Hugging Face cache.
          </span>
        </div>
      </section>
      <ApiAccess />
      <div className="settings-actions">
        <button
          type="button"
          className="button"
          disabled={!dirty || saving}
          onClick={() => {
            setDraft(draftOf(settings));
            setErrors({});
          }}
        >
          Discard changes
        </button>
        <button type="submit" className="button primary" disabled={!dirty || saving}>
          {saving ? 'Saving…' : 'Save settings'}
        </button>
        <span className="small muted" role="status">
          {saved && !dirty
            ? 'Saved.'
            : Object.keys(errors).length || Object.values(refused).some(Boolean)
              ? 'Some values need fixing.'
              : ''}
        </span>
        <button type="button" className="button reset-settings" onClick={reset} disabled={saving}>
          Reset to defaults…
        </button>
      </div>
    </form>
  );
}
