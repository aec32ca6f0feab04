// Models: the GGUF files Folio found (name, architecture, size, quantization, context, source; unsupported
// ones greyed with the reason), adding a file by path, downloads from the catalog or a Hugging Face URL
// with progress, and the memory estimate before a model is loaded (refused plainly when it does not fit).
import { useEffect, useState, type FormEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';

import type { MemoryEstimate, ModelEntry } from '../../../electron/api/contract.ts';
import type { FolioShell } from '../../../electron/api/bridge.ts';
import { api } from '../api/client.ts';
import {
  addModel,
  downloadModel,
  estimateModel,
  loadCatalog,
  loadModels,
  rescanModels,
  selectModel,
  useModels,
} from '../stores/models.ts';
import { useSettings } from '../stores/settings.ts';
import { runningTasks, useTasks } from '../stores/tasks.ts';
import { formatBytes, formatCount, formatParams } from '../lib/format.ts';
import { TaskProgress } from './Progress.tsx';

const SOURCE: Record<ModelEntry['source'], string> = {
  lmstudio: 'LM Studio',
  ollama: 'Ollama',
  huggingface: 'Hugging Face cache',
  folder: 'Model folder',
  download: 'Downloaded',
  added: 'Added by you',
};

function unsupportedWhy(m: ModelEntry): string {
  return m.unsupportedReason ?? m.error ?? `Folio does not run the ${m.architecture ?? 'unknown'} architecture`;
}

function EstimateView({ estimate }: { estimate: MemoryEstimate | { error: string } | undefined }) {
  if (!estimate) return <p className="muted small">Estimating the memory it needs…</p>;
  if ('error' in estimate) return <p className="msg-error small">The memory estimate failed: {estimate.error}</p>;
  const rows: [string, number][] = [
    ['Weights', estimate.weightBytes],
    ['Cache of a full context, compressed', estimate.kvBytesCompressed],
    ['Working memory', estimate.workingBytes],
  ];
  return (
    <div className={`estimate ${estimate.fits ? 'fits' : 'no-fit'}`} data-testid="estimate">
      <dl className="facts small">
        {rows.map(([k, v]) => (
          <div key={k} className="fact">
            <dt>{k}</dt>
            <dd>{formatBytes(v)}</dd>
          </div>
        ))}
        <div className="fact">
          <dt>Uncompressed cache would be</dt>
          <dd>{formatBytes(estimate.kvBytesFull)}</dd>
        </div>
        <div className="fact total">
          <dt>Total</dt>
          <dd>
            {formatBytes(estimate.totalBytes)} of {formatBytes(estimate.availableBytes)} available
          </dd>
        </div>
      </dl>
      <p className={estimate.fits ? 'small' : 'msg-error small'} role={estimate.fits ? undefined : 'alert'}>
        {estimate.fits ? '✓ ' : '✗ Does not fit: '}
        {estimate.message}
      </p>
    </div>
  );
}

function ModelRow({
  m,
  active,
  previewed,
  onPreview,
}: {
  m: ModelEntry;
  active: boolean;
  previewed: boolean;
  onPreview: () => void;
}) {
  return (
    <li
      className={`model-row${m.supported ? '' : ' unsupported'}${previewed ? ' previewed' : ''}`}
      aria-disabled={!m.supported || undefined}
    >
      <button
        type="button"
        className="model-select"
        onClick={onPreview}
        aria-expanded={previewed}
        aria-describedby={m.supported ? undefined : `why-${m.id}`}
      >
        <span className="model-name">
          {m.name} {active && <span className="badge status-ready">In use</span>}
        </span>
        <span className="model-meta small">
          {[
            m.architecture ?? 'unknown architecture',
            m.parameters ? `${formatParams(m.parameters)} parameters` : null,
            m.quantization,
            formatBytes(m.fileBytes),
            m.contextLength ? `${formatCount(m.contextLength)} context` : null,
            SOURCE[m.source],
          ]
            .filter(Boolean)
            .join(' · ')}
        </span>
        {!m.supported && (
          <span id={`why-${m.id}`} className="model-why small">
            Not supported: {unsupportedWhy(m)}
          </span>
        )}
        <span className="model-path small muted">{m.path}</span>
      </button>
    </li>
  );
}

function Preview({ m, active }: { m: ModelEntry; active: boolean }) {
  const estimate = useModels((s) => s.estimates[m.id]);
  const selecting = useModels((s) => s.selecting);
  const error = useModels((s) => s.selectError[m.id]);
  const load = useTasks(useShallow((s) => runningTasks(s).filter((t) => t.kind === 'load-model')));
  useEffect(() => {
    if (m.supported) void estimateModel(m.id);
  }, [m.id, m.supported]);
  const fits = estimate && !('error' in estimate) ? estimate.fits : false;
  return (
    <section className="card model-preview" aria-label={`${m.name}: memory and loading`}>
      <h3>{m.name}</h3>
      {m.supported ? <EstimateView estimate={estimate} /> : <p className="msg-error small">{unsupportedWhy(m)}</p>}
      {load.map((t) => (
        <TaskProgress key={t.taskId} task={t} />
      ))}
      {error && (
        <p className="msg-error small" role="alert">
          {error}
        </p>
      )}
      <button
        type="button"
        className="button primary"
        disabled={!m.supported || !fits || selecting !== null || active}
        onClick={() => void selectModel(m.id)}
      >
        {active ? 'In use' : selecting === m.id ? 'Loading…' : 'Load and use this model'}
      </button>
    </section>
  );
}

/** The desktop app adds only a file the user picks in the native dialog: its main process refuses typed paths. */
function ChooseModelFile({ shell }: { shell: FolioShell }) {
  return (
    <div className="inline-form">
      <div className="inline-row">
        <button
          type="button"
          className="button"
          onClick={() => void shell.openFileDialog('model').then((p) => (p[0] ? addModel(p[0]) : null))}
        >
          Choose a GGUF file…
        </button>
      </div>
      <p className="muted small">The file stays where it is; Folio only reads it.</p>
    </div>
  );
}

function AddModel() {
  const shell = api().shell;
  return shell ? <ChooseModelFile shell={shell} /> : <AddModelByPath />;
}

function AddModelByPath() {
  const [path, setPath] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (path.trim() && (await addModel(path.trim()))) setPath('');
  };
  return (
    <form className="inline-form" onSubmit={submit}>
      <label htmlFor="model-path">Add a GGUF file</label>
      <div className="inline-row">
        <input
          id="model-path"
          type="text"
          placeholder="/path/to/model.gguf"
          value={path}
          onChange={(e) => setPath(e.target.value)}
          spellCheck={false}
        />
        <button type="submit" className="button" disabled={!path.trim()}>
          Add
        </button>
      </div>
      <p className="muted small">The file stays where it is; Folio only reads it.</p>
    </form>
  );
}

function Downloads() {
  const catalog = useModels((s) => s.catalog);
  const tasks = useTasks(useShallow((s) => Object.values(s.byId).filter((t) => t.kind === 'download')));
  const [url, setUrl] = useState('');
  useEffect(() => {
    void loadCatalog();
  }, []);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const u = url.trim();
    if (!u) return;
    if (await downloadModel({ url: u }, u.split('/').pop() ?? u)) setUrl('');
  };
  return (
    <section className="card" aria-labelledby="downloads-heading">
      <h3 id="downloads-heading">Download</h3>
      {tasks.map((t) => (
        <TaskProgress key={t.taskId} task={t} />
      ))}
      {catalog.length > 0 && (
        <ul className="catalog">
          {catalog.map((c) => (
            <li key={c.id}>
              <div>
                <strong>{c.name}</strong> <span className="muted small">{formatBytes(c.fileBytes)}</span>
                <p className="small muted">{c.description}</p>
              </div>
              <button
                type="button"
                className="button small"
                onClick={() => void downloadModel({ catalogId: c.id }, c.name)}
                aria-label={`Download ${c.name}`}
              >
                Download
              </button>
            </li>
          ))}
        </ul>
      )}
      <form className="inline-form" onSubmit={submit}>
        <label htmlFor="hf-url">From a Hugging Face URL</label>
        <div className="inline-row">
          <input
            id="hf-url"
            type="url"
            placeholder="https://huggingface.co/…/resolve/main/model.gguf"
            value={url}
            onChange={(e) => setUrl(e.target.value)}
            spellCheck={false}
          />
          <button type="submit" className="button" disabled={!url.trim()}>
            Download
          </button>
        </div>
        {api().shell && <p className="muted small">Folio shows you the address and asks before it downloads.</p>}
      </form>
    </section>
  );
}

export function ModelsPage() {
  const list = useModels((s) => s.list);
  const loaded = useModels((s) => s.loaded);
  const scanning = useModels((s) => s.scanning);
  const active = useSettings((s) => s.settings?.modelId ?? null);
  const [preview, setPreview] = useState<string | null>(active);
  useEffect(() => {
    void loadModels();
  }, []);
  const previewed = list.find((m) => m.id === preview) ?? null;
  return (
    <div className="models-page">
      <div className="models-grid">
        <section className="card" aria-labelledby="models-heading">
          <div className="section-head">
            <h3 id="models-heading">Models on this computer</h3>
            <button type="button" className="button small" onClick={() => void rescanModels()} disabled={scanning}>
              {scanning ? 'Searching…' : 'Search again'}
            </button>
          </div>
          {loaded && list.length === 0 && (
            <p className="muted small">No GGUF models found. Add a file below or download one.</p>
          )}
          <ul className="model-list">
            {list.map((m) => (
              <ModelRow
                key={m.id}
                m={m}
                active={m.id === active}
                previewed={m.id === preview}
                onPreview={() => setPreview(m.id === preview ? null : m.id)}
              />
            ))}
          </ul>
          <AddModel />
        </section>
        <div className="models-side">
          {previewed ? (
            <Preview m={previewed} active={previewed.id === active} />
          ) : (
            <section className="card">
              <p className="muted small">Choose a model to see the memory it needs before loading it.</p>
            </section>
          )}
          <Downloads />
        </div>
      </div>
    </div>
  );
}
