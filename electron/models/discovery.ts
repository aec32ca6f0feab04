// Finds GGUF models already on disk, so users of other apps need not download them again:
//
// - LM Studio: ~/.lmstudio/models, the older ~/.cache/lm-studio/models, and the folder named by
//   `downloadsFolder` in ~/.lmstudio/settings.json (the "Models Directory" setting; the key is what
//   scripts that seed LM Studio's store read, and lmstudio-bug-tracker#1601 points to that file).
//   Files lie at <publisher>/<repo>/<file>.gguf, but any depth is accepted.
// - Ollama: $OLLAMA_MODELS, else ~/.ollama/models (%USERPROFILE%\.ollama\models on Windows), and on
//   Linux the system service's /usr/share/ollama/.ollama/models. A manifest at
//   manifests/<host>/<namespace>/<name>/<tag> lists layers; the one with mediaType
//   application/vnd.ollama.image.model is the GGUF, stored as blobs/sha256-<hex> for digest
//   sha256:<hex> (ollama/ollama server/internal/manifest/manifest.go documents the format).
// - Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
//   else ~/.cache/huggingface/hub (huggingface_hub's constants). Files are
//   models--<org>--<name>/snapshots/<revision>/<path>.gguf, usually symlinks into ../../blobs/.
// - Folio's own download folder, the folders the user adds, and single files the user adds.
//
// Every root is injectable (home folder, environment, platform), so tests build fake trees in a
// temporary folder. The scan never fails as a whole: a file that is not GGUF or cannot be read is
// reported in `skipped` with the reason; a GGUF whose header is broken is listed with its error.
// Directory walks are bounded in depth and entries, and follow each real directory once, so
// symlink loops end.
import { createHash } from 'node:crypto';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';

import { ApiError, type ModelEntry } from '../api/contract.ts';
import { readGgufHeader, summarizeGguf, type GgufSummary, type HeaderLimits } from './gguf-header.ts';

export type ModelSource = ModelEntry['source'];

/** A model found on disk: the contract's ModelEntry plus what the header says beyond it. */
export interface DiscoveredModel extends ModelEntry {
  /** The file's real path (symlinks resolved); the id is derived from it. */
  realPath: string;
  headSize: number | null;
  valueHeadSize: number | null;
  vocabSize: number | null;
  heads: number | null;
  /** Why the engine cannot run it (architecture, split file, ...); null when supported. */
  unsupportedReason: string | null;
  /** Every file of a split model, in order; just the file otherwise. */
  parts: string[];
  /** Other names the same file goes by (e.g. Ollama tags sharing a blob). */
  aliases: string[];
}

export interface SkippedFile {
  path: string;
  source: ModelSource;
  reason: string;
}

export interface ScanRoot {
  source: ModelSource;
  path: string;
  /** tree: *.gguf files at any depth; ollama: manifests + blobs; hf-cache: models--org--name/snapshots. */
  kind: 'tree' | 'ollama' | 'hf-cache';
}

export interface DiscoveryOptions {
  /** Home folder; default os.homedir(). */
  home?: string;
  /** Environment (OLLAMA_MODELS, HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME); default process.env. */
  env?: Record<string, string | undefined>;
  platform?: NodeJS.Platform;
  /** Look in LM Studio's, Ollama's and Hugging Face's places; default true. */
  knownPlaces?: boolean;
  /** Also look in system-wide places (the Linux Ollama service's store); default true. */
  systemWide?: boolean;
  /** Folio's own download folder (source 'download'). */
  downloadFolder?: string;
  /** Folders the user added (source 'folder'). */
  folders?: string[];
  /** Single files the user added (source 'added'). */
  files?: string[];
  /** Deepest folder level searched below a root; default 8. */
  maxDepth?: number;
  /** Most directory entries looked at under one root; default 100,000. */
  maxEntries?: number;
  /** Header reads in parallel; default 4. */
  concurrency?: number;
  /** Header summaries kept between scans, keyed by real path (checked against size and mtime). */
  cache?: HeaderCache;
  limits?: HeaderLimits;
}

export type HeaderCache = Map<string, { stamp: string; summary: GgufSummary | null; error: ApiError | null }>;

export interface DiscoveryResult {
  models: DiscoveredModel[];
  skipped: SkippedFile[];
  /** The roots looked at, and whether each exists. */
  roots: (ScanRoot & { exists: boolean })[];
}

/** A stable id for a model file: a hash of its real path. */
export function modelId(realPath: string): string {
  return 'm' + createHash('sha256').update(realPath).digest('hex').slice(0, 24);
}

/** The parts of a split GGUF file name (name-00001-of-00003.gguf), or null. */
export function splitName(fileName: string): { stem: string; index: number; count: number } | null {
  const m = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i.exec(fileName);
  if (!m) return null;
  const index = Number(m[2]);
  const count = Number(m[3]);
  if (index < 1 || count < 2 || index > count) return null;
  return { stem: m[1], index, count };
}

/** The places looked in, in order of precedence (a file found twice keeps its first source). */
export function knownRoots(o: DiscoveryOptions = {}): ScanRoot[] {
  const home = o.home ?? homedir();
  const env = o.env ?? process.env;
  const platform = o.platform ?? process.platform;
  const roots: ScanRoot[] = [];
  if (o.knownPlaces ?? true) {
    roots.push({ source: 'lmstudio', path: join(home, '.lmstudio', 'models'), kind: 'tree' });
    roots.push({ source: 'lmstudio', path: join(home, '.cache', 'lm-studio', 'models'), kind: 'tree' });
    roots.push({ source: 'ollama', path: env.OLLAMA_MODELS || join(home, '.ollama', 'models'), kind: 'ollama' });
    if (platform === 'linux' && (o.systemWide ?? true)) {
      roots.push({ source: 'ollama', path: '/usr/share/ollama/.ollama/models', kind: 'ollama' });
    }
    const hfHome = env.HF_HOME || join(env.XDG_CACHE_HOME || join(home, '.cache'), 'huggingface');
    roots.push({
      source: 'huggingface',
      path: env.HF_HUB_CACHE || env.HUGGINGFACE_HUB_CACHE || join(hfHome, 'hub'),
      kind: 'hf-cache',
    });
  }
  if (o.downloadFolder) roots.push({ source: 'download', path: o.downloadFolder, kind: 'tree' });
  for (const f of o.folders ?? []) roots.push({ source: 'folder', path: f, kind: 'tree' });
  // drop repeats of the same path
  const seen = new Set<string>();
  return roots.filter((r) => (seen.has(r.path) ? false : (seen.add(r.path), true)));
}

/** LM Studio's custom models folder from ~/.lmstudio/settings.json, or null. */
export async function lmStudioSettingsFolder(home: string): Promise<string | null> {
  try {
    const text = await readFile(join(home, '.lmstudio', 'settings.json'), 'utf8');
    if (text.length > 4 * 1024 * 1024) return null;
    const folder = (JSON.parse(text) as Record<string, unknown>).downloadsFolder;
    return typeof folder === 'string' && isAbsolute(folder) ? folder : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------------

/** A file to describe, with the name it is shown under. */
interface Candidate {
  path: string;
  source: ModelSource;
  name: string;
  parts?: string[];
  aliases?: string[];
}

class Scan {
  readonly candidates: Candidate[] = [];
  readonly skipped: SkippedFile[] = [];
  constructor(readonly o: DiscoveryOptions) {}
  skip(path: string, source: ModelSource, reason: string) {
    this.skipped.push({ path, source, reason });
  }
}

export async function discoverModels(o: DiscoveryOptions = {}): Promise<DiscoveryResult> {
  const scan = new Scan(o);
  const roots = knownRoots(o);
  if (o.knownPlaces ?? true) {
    const custom = await lmStudioSettingsFolder(o.home ?? homedir());
    if (custom && !roots.some((r) => r.path === custom)) {
      roots.splice(2, 0, { source: 'lmstudio', path: custom, kind: 'tree' });
    }
  }
  const seenRoots: (ScanRoot & { exists: boolean })[] = [];
  for (const root of roots) {
    const exists = await isDirectory(root.path);
    seenRoots.push({ ...root, exists });
    if (!exists) continue;
    if (root.kind === 'tree') await scanTree(scan, root);
    else if (root.kind === 'ollama') await scanOllama(scan, root);
    else await scanHfCache(scan, root);
  }
  for (const f of o.files ?? []) {
    const s = splitName(basename(f));
    if (s && s.index !== 1) scan.skip(f, 'added', `part ${s.index} of ${s.count} of a split model: add its first part`);
    else
      scan.candidates.push({
        path: f,
        source: 'added',
        name: s ? s.stem : stemOf(f),
        parts: s ? splitPartPaths(f, s) : undefined,
      });
  }

  // describe each candidate once per real file, in parallel
  const models: DiscoveredModel[] = [];
  const byReal = new Map<string, DiscoveredModel>();
  const described = await mapLimit(scan.candidates, o.concurrency ?? 4, (c) => describeCandidate(c, o));
  for (let i = 0; i < described.length; i++) {
    const c = scan.candidates[i];
    const d = described[i];
    if ('skip' in d) {
      scan.skip(c.path, c.source, d.skip);
      continue;
    }
    const earlier = byReal.get(d.realPath);
    if (earlier) {
      if (earlier.name !== d.name && !earlier.aliases.includes(d.name)) earlier.aliases.push(d.name);
      continue;
    }
    byReal.set(d.realPath, d);
    models.push(d);
  }
  return { models, skipped: scan.skipped, roots: seenRoots };
}

/** Describes one file the user adds (models.add). Throws ApiError when it is not a readable GGUF. */
export async function describeModelFile(
  path: string,
  o: DiscoveryOptions & { source?: ModelSource; name?: string } = {},
): Promise<DiscoveredModel> {
  const split = splitName(basename(path));
  let parts: string[] | undefined;
  if (split) {
    if (split.index !== 1)
      throw new ApiError(
        'MODEL_SPLIT_PART',
        `${path} is part ${split.index} of ${split.count} of a split model: add its first part`,
      );
    parts = splitPartPaths(path, split);
  }
  const d = await describeCandidate({ path, source: o.source ?? 'added', name: o.name ?? stemOf(path), parts }, o);
  if ('skip' in d) throw new ApiError(d.code, d.skip);
  return d;
}

// ---------------------------------------------------------------------------------------------------
// Walks

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

function stemOf(p: string): string {
  return basename(p).replace(/\.gguf$/i, '');
}

function splitPartPaths(first: string, s: { stem: string; count: number }): string[] {
  const pad = (n: number) => String(n).padStart(5, '0');
  return Array.from({ length: s.count }, (_, i) =>
    join(dirname(first), `${s.stem}-${pad(i + 1)}-of-${pad(s.count)}.gguf`),
  );
}

interface WalkFile {
  path: string;
  /** Path relative to the root, with '/' separators. */
  rel: string;
  depth: number;
}

/**
 * Lists the regular files under `root` (symlinks followed, each real directory entered once), to
 * `maxDepth` folder levels and `maxEntries` entries. Folders starting with '.' are not entered.
 */
async function walk(
  scan: Scan,
  root: ScanRoot,
  maxDepth: number,
  accept: (name: string) => boolean,
): Promise<WalkFile[]> {
  const maxEntries = scan.o.maxEntries ?? 100_000;
  const out: WalkFile[] = [];
  const visited = new Set<string>();
  let entries = 0;
  let truncatedNoted = false;
  const queue: { dir: string; depth: number }[] = [{ dir: root.path, depth: 0 }];
  for (let q = 0; q < queue.length; q++) {
    const { dir, depth } = queue[q];
    let real: string;
    try {
      real = await realpath(dir);
    } catch {
      continue;
    }
    if (visited.has(real)) continue;
    visited.add(real);
    let names: string[];
    try {
      names = (await readdir(dir)).sort();
    } catch (e) {
      scan.skip(
        dir,
        root.source,
        `cannot read the folder: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
      continue;
    }
    for (const name of names) {
      if (++entries > maxEntries) {
        if (!truncatedNoted)
          scan.skip(root.path, root.source, `stopped after ${maxEntries} entries; add a narrower folder`);
        truncatedNoted = true;
        return out;
      }
      const p = join(dir, name);
      let st;
      try {
        st = await stat(p); // follows symlinks
      } catch (e) {
        if (accept(name))
          scan.skip(
            p,
            root.source,
            `cannot read it: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'a broken link' : (e as Error).message}`,
          );
        continue;
      }
      if (st.isDirectory()) {
        if (!name.startsWith('.') && depth < maxDepth) queue.push({ dir: p, depth: depth + 1 });
      } else if (st.isFile() && accept(name)) {
        out.push({ path: p, rel: relative(root.path, p).split(sep).join('/'), depth });
      }
    }
  }
  return out;
}

const isGgufName = (name: string) => /\.gguf$/i.test(name);

/** Groups split files: the first part stands for the model, the others ride along (or are skipped). */
function groupSplits(scan: Scan, root: ScanRoot, files: WalkFile[], nameOf: (f: WalkFile) => string): void {
  const firsts = new Set(files.filter((f) => splitName(basename(f.path))?.index === 1).map((f) => f.path));
  for (const f of files) {
    const s = splitName(basename(f.path));
    if (!s) {
      scan.candidates.push({ path: f.path, source: root.source, name: nameOf(f) });
    } else if (s.index === 1) {
      scan.candidates.push({
        path: f.path,
        source: root.source,
        name: nameOf(f).replace(/-00001-of-\d{5}$/i, ''),
        parts: splitPartPaths(f.path, s),
      });
    } else if (!firsts.has(splitPartPaths(f.path, s)[0])) {
      scan.skip(f.path, root.source, `part ${s.index} of ${s.count} of a split model whose first part is missing`);
    }
  }
}

/** LM Studio folders, Folio's download folder and user folders: *.gguf at any depth. */
async function scanTree(scan: Scan, root: ScanRoot): Promise<void> {
  const files = await walk(scan, root, scan.o.maxDepth ?? 8, isGgufName);
  // LM Studio shows <publisher>/<repo>/<file>; the file's own name is what users recognise
  groupSplits(scan, root, files, (f) => stemOf(f.path));
}

const OLLAMA_MODEL_LAYER = 'application/vnd.ollama.image.model';

/** Ollama: manifests/<host>/<namespace>/<name>/<tag> → the model layer's blob. */
async function scanOllama(scan: Scan, root: ScanRoot): Promise<void> {
  const manifests: ScanRoot = { ...root, path: join(root.path, 'manifests') };
  if (!(await isDirectory(manifests.path))) return;
  const files = await walk(scan, manifests, 3, () => true);
  const byBlob = new Map<string, Candidate>();
  for (const f of files) {
    const segs = f.rel.split('/');
    if (segs.length !== 4) continue; // host/namespace/name/tag
    const [host, namespace, model, tag] = segs;
    const name =
      host === 'registry.ollama.ai'
        ? namespace === 'library'
          ? `${model}:${tag}`
          : `${namespace}/${model}:${tag}`
        : `${host}/${namespace}/${model}:${tag}`;
    let manifest: unknown;
    try {
      const st = await stat(f.path);
      if (st.size > 1024 * 1024) throw new Error(`a ${st.size}-byte manifest is too large`);
      manifest = JSON.parse(await readFile(f.path, 'utf8'));
    } catch (e) {
      scan.skip(f.path, root.source, `cannot read the Ollama manifest of ${name}: ${(e as Error).message}`);
      continue;
    }
    const layers = (manifest as { layers?: unknown }).layers;
    const layer = Array.isArray(layers)
      ? (layers as { mediaType?: unknown; digest?: unknown }[]).find((l) => l && l.mediaType === OLLAMA_MODEL_LAYER)
      : undefined;
    if (!layer) {
      scan.skip(f.path, root.source, `the Ollama manifest of ${name} has no model layer (${OLLAMA_MODEL_LAYER})`);
      continue;
    }
    const m = typeof layer.digest === 'string' ? /^sha256:([0-9a-f]{64})$/.exec(layer.digest) : null;
    if (!m) {
      scan.skip(f.path, root.source, `the Ollama manifest of ${name} has a malformed digest`);
      continue;
    }
    const blob = join(root.path, 'blobs', `sha256-${m[1]}`);
    const known = byBlob.get(blob);
    if (known) {
      known.aliases!.push(name);
      continue;
    }
    const c: Candidate = { path: blob, source: root.source, name, aliases: [] };
    byBlob.set(blob, c);
    scan.candidates.push(c);
  }
  // prefer a specific tag over "latest" as the shown name
  for (const c of byBlob.values()) {
    if (c.name.endsWith(':latest') && c.aliases!.length) {
      const better = c.aliases!.find((a) => !a.endsWith(':latest'));
      if (better) {
        c.aliases = [c.name, ...c.aliases!.filter((a) => a !== better)];
        c.name = better;
      }
    }
  }
}

/** Hugging Face hub cache: models--<org>--<name>/snapshots/<revision>/**.gguf. */
async function scanHfCache(scan: Scan, root: ScanRoot): Promise<void> {
  let repos: string[];
  try {
    repos = (await readdir(root.path)).filter((n) => n.startsWith('models--')).sort();
  } catch (e) {
    scan.skip(root.path, root.source, `cannot read the folder: ${(e as Error).message}`);
    return;
  }
  for (const repoDir of repos) {
    const repoId = repoDir.slice('models--'.length).split('--').join('/');
    const repoPath = join(root.path, repoDir);
    let revisions: string[];
    try {
      revisions = (await readdir(join(repoPath, 'snapshots'))).sort();
    } catch {
      continue; // no snapshots yet (an interrupted download)
    }
    // the revision refs/main points to comes first; older snapshots only add files main lacks
    let main: string | null = null;
    try {
      main = (await readFile(join(repoPath, 'refs', 'main'), 'utf8')).trim();
    } catch {
      main = null;
    }
    if (main && revisions.includes(main)) revisions = [main, ...revisions.filter((r) => r !== main)];
    const found: { f: WalkFile; rev: string }[] = [];
    for (const rev of revisions) {
      const snap: ScanRoot = { ...root, path: join(repoPath, 'snapshots', rev) };
      for (const f of await walk(scan, snap, scan.o.maxDepth ?? 8, isGgufName)) found.push({ f, rev });
    }
    const relPaths = new Set(found.map((x) => x.f.rel));
    const shown = new Set<string>();
    const files: WalkFile[] = [];
    const names = new Map<string, string>();
    for (const { f, rev } of found) {
      const base =
        relPaths.size === 1 && !splitName(basename(f.rel)) ? repoId : `${repoId}/${f.rel.replace(/\.gguf$/i, '')}`;
      const name = shown.has(f.rel) ? `${base} (revision ${rev.slice(0, 7)})` : base;
      shown.add(f.rel);
      names.set(f.path, name);
      files.push(f);
    }
    groupSplits(scan, root, files, (f) => names.get(f.path)!);
  }
}

// ---------------------------------------------------------------------------------------------------
// Describing a file

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

type Described = DiscoveredModel | { skip: string; code: string };

async function readSummary(
  real: string,
  size: number,
  mtimeMs: number,
  o: DiscoveryOptions,
): Promise<{ summary: GgufSummary | null; error: ApiError | null }> {
  const stamp = `${size}:${mtimeMs}`;
  const hit = o.cache?.get(real);
  if (hit && hit.stamp === stamp) return hit;
  let summary: GgufSummary | null = null;
  let error: ApiError | null = null;
  try {
    summary = summarizeGguf(await readGgufHeader(real, o.limits));
  } catch (e) {
    error = e instanceof ApiError ? e : new ApiError('FILE_UNREADABLE', `cannot read ${real}: ${(e as Error).message}`);
  }
  o.cache?.set(real, { stamp, summary, error });
  return { summary, error };
}

async function describeCandidate(c: Candidate, o: DiscoveryOptions): Promise<Described> {
  let real: string;
  let size: number;
  let mtimeMs: number;
  try {
    real = await realpath(c.path);
    const st = await stat(real);
    if (!st.isFile()) return { skip: 'not a regular file', code: 'FILE_UNREADABLE' };
    size = st.size;
    mtimeMs = st.mtimeMs;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? {
          skip:
            c.source === 'ollama'
              ? `the Ollama blob of ${c.name} is missing`
              : 'the file does not exist (or is a broken link)',
          code: 'FILE_NOT_FOUND',
        }
      : { skip: `cannot read it: ${code ?? (e as Error).message}`, code: 'FILE_UNREADABLE' };
  }

  const { summary, error } = await readSummary(real, size, mtimeMs, o);
  if (
    error &&
    (error.code === 'GGUF_BAD_MAGIC' || error.code === 'FILE_UNREADABLE' || error.code === 'FILE_NOT_FOUND')
  ) {
    return { skip: error.message, code: error.code };
  }
  if (summary && (summary.architecture === 'clip' || summary.architecture === 'mmproj')) {
    return { skip: 'a vision projector (mmproj), not a language model', code: 'MODEL_NOT_LLM' };
  }

  const parts = c.parts ?? [c.path];
  let fileBytes = size;
  let parameters = summary?.parameters ?? null;
  let partError: string | null = null;
  if (c.parts && c.parts.length > 1) {
    // the other parts' headers hold the rest of the tensors: add their sizes and parameter counts
    for (const p of c.parts.slice(1)) {
      try {
        const r = await realpath(p);
        const st = await stat(r);
        fileBytes += st.size;
        const s = await readSummary(r, st.size, st.mtimeMs, o);
        if (s.summary && parameters !== null) parameters += s.summary.parameters;
        else if (s.error) partError ??= `part ${basename(p)} is unreadable: ${s.error.message}`;
      } catch {
        partError ??= `part ${basename(p)} is missing`;
      }
    }
  }

  const splitReason =
    c.parts && c.parts.length > 1
      ? `the model is split into ${c.parts.length} files, and Folio's engine cannot load split files yet`
      : null;
  const unsupportedReason = error ? 'the file could not be read' : (splitReason ?? summary?.unsupportedReason ?? null);
  return {
    id: modelId(real),
    path: c.path,
    realPath: real,
    name: c.name,
    source: c.source,
    fileBytes,
    architecture: summary?.architecture ?? null,
    quantization: summary?.quantization ?? null,
    contextLength: summary?.contextLength ?? null,
    chatTemplate: summary?.chatTemplate ?? null,
    parameters: parameters && parameters > 0 ? parameters : null,
    layers: summary?.layers ?? null,
    kvHeads: summary?.kvHeads ?? null,
    supported: unsupportedReason === null,
    error: error ? error.message : partError,
    headSize: summary?.headSize ?? null,
    valueHeadSize: summary?.valueHeadSize ?? null,
    vocabSize: summary?.vocabSize ?? null,
    heads: summary?.heads ?? null,
    unsupportedReason,
    parts,
    aliases: c.aliases ?? [],
  };
}
