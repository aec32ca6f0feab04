// The architecture, held by the code's own include and import graphs (docs/architecture.md, "The parts").
//   native/src: every folder is one layer; a file includes only its own folder and the layers below it, so
//   no folder includes one above it (nothing in backend/ includes model/) and the folders form no cycle.
//   native/cuda, native/vulkan: see the engine only through the C table, backend/gpu-abi.h.
//   electron/ and renderer/src/: no import cycle between files; renderer/src/api/ (the transport) imports
//   no store, renderer/src/lib/ neither; the renderer reaches the app core only through electron/api/ and
//   electron/shared/ (pure rules, importing no Node module and nothing else of the app); electron/api/ and
//   electron/engine/ do not import each other.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import ts from 'typescript';
import { repoRoot } from './helpers/shared.ts';

// ---- graphs -------------------------------------------------------------------------------------------------

type Graph = Map<string, Set<string>>;

function addEdge(g: Graph, from: string, to: string) {
  if (!g.has(from)) g.set(from, new Set());
  if (!g.has(to)) g.set(to, new Set());
  g.get(from)!.add(to);
}

// Every cycle of g, one per strongly connected component (Tarjan), each as the shortest closed path through
// the component's first node, e.g. ['a', 'b', 'c', 'a']. A node that lists itself is a cycle of one.
function findCycles(g: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1 || g.get(v)?.has(v)) components.push(c.sort());
    }
  };
  for (const v of [...g.keys()].sort()) if (!index.has(v)) visit(v);
  return components.map((c) => shortestCycle(g, c[0], new Set(c)));
}

// Breadth-first from `start` back to itself inside one component.
function shortestCycle(g: Graph, start: string, inside: Set<string>): string[] {
  const from = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i];
    for (const w of [...(g.get(v) ?? [])].sort()) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path: string[] = [];
        for (let u = v; u !== start; u = from.get(u)!) path.unshift(u);
        return [start, ...path, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  throw new Error(`${start} is in no cycle`);
}

// ---- native/src: the layers -----------------------------------------------------------------------------------

// The folders of native/src from the bottom up, each with the layers it is built on; a folder may include any
// layer reachable from its list (its foundations' foundations too). A new folder must be placed here.
const NATIVE_LAYERS: Record<string, string[]> = {
  core: [], // errors, threads, mapped files, fp16: no engine knowledge
  quant: ['core'], // GGUF tensor types, block layouts, dot-product and matrix kernels
  gguf: ['quant'], // the file format: metadata, tensor directory, metadata rules
  tokenizer: ['gguf'], // vocabularies read from GGUF metadata
  sampling: ['core'], // logits to a token
  kv: ['quant'], // KV cache compression: the flat cache, scorers (kv/scorers/), allocation, schedule, statistics
  backend: ['kv'], // the operations of a forward pass (CPU, GPU through the C table), the KV stores
  model: ['gguf', 'tokenizer'], // what describes a model: hyper-parameters, weights, loading
  forward: ['backend', 'model'], // the one forward pass and the compression of a layer, over a backend
  session: ['forward', 'sampling'], // a conversation's state: prefill, compress, generate, fork, save
  napi: ['session'], // the Node-API binding
};

// The layers a folder may include: the transitive closure of NATIVE_LAYERS (it must be acyclic itself).
function allowedLayers(layers: Record<string, string[]>): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const reach = (f: string, path: string[]): Set<string> => {
    if (path.includes(f)) throw new Error(`the layer table has a cycle: ${[...path, f].join(' → ')}`);
    if (out.has(f)) return out.get(f)!;
    const s = new Set<string>();
    for (const d of layers[f] ?? []) {
      s.add(d);
      for (const x of reach(d, [...path, f])) s.add(x);
    }
    out.set(f, s);
    return s;
  };
  for (const f of Object.keys(layers)) reach(f, []);
  return out;
}

type Include = { file: string; line: number; target: string };

function walk(dir: string, keep: (name: string) => boolean, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, keep, out);
    else if (keep(name)) out.push(p);
  }
  return out;
}

const toPosix = (p: string) => p.split(sep).join('/');

// The quoted includes of the files under `dir`, each resolved to a path relative to native/src when it
// names an engine file (a quoted include is looked up next to the file first, then in native/src).
function nativeIncludes(dir: string): Include[] {
  const src = join(repoRoot, 'native/src');
  const out: Include[] = [];
  for (const file of walk(dir, (n) => /\.(cc|h|cu|cuh|inc)$/.test(n))) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, i) => {
        const m = /^\s*#\s*include\s*"([^"]+)"/.exec(text);
        if (!m) return;
        const local = join(dirname(file), m[1]);
        const target = existsSync(local) ? local : join(src, m[1]);
        out.push({ file: toPosix(relative(repoRoot, file)), line: i + 1, target: toPosix(relative(src, target)) });
      });
  }
  return out;
}

// The include edges between different folders of native/src that the table does not allow.
function layerViolations(includes: Include[], layers: Record<string, string[]>): string[] {
  const allowed = allowedLayers(layers);
  const bad: string[] = [];
  for (const inc of includes) {
    const from = inc.file.replace(/^native\/src\//, '').split('/')[0];
    const to = inc.target.split('/')[0];
    if (from === to) continue;
    if (!allowed.get(from)?.has(to)) {
      bad.push(`${from}/ → ${to}/: ${inc.file}:${inc.line} includes "${inc.target}"`);
    }
  }
  return bad;
}

function folderGraph(includes: Include[]): Graph {
  const g: Graph = new Map();
  for (const inc of includes) {
    const from = inc.file.replace(/^native\/src\//, '').split('/')[0];
    const to = inc.target.split('/')[0];
    if (from !== to) addEdge(g, from, to);
  }
  return g;
}

// ---- electron/ and renderer/src/: the import graph ------------------------------------------------------------

const TS_SOURCE = /\.(ts|tsx|mts|cts|mjs|js)$/;

// A relative specifier to the file it names (with its extension, as the code writes it, or without one, as
// the bundler allows); undefined for a package or a file that is not there.
function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = join(dirname(from), spec);
  const candidates = [base, ...['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs'].map((e) => base + e)];
  candidates.push(base.replace(/\.js$/, '.ts'), base.replace(/\.js$/, '.tsx'), join(base, 'index.ts'));
  return candidates.find((c) => TS_SOURCE.test(c) && existsSync(c) && statSync(c).isFile());
}

type Specifier = { line: number; spec: string; typeOnly: boolean; dynamic: boolean };
type Import = Specifier & { file: string; target: string };

// The imports and re-exports of a file, static and dynamic, read with the TypeScript parser (so that an
// import in a comment or a string is none).
function fileImports(file: string, text: string): Specifier[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: Specifier[] = [];
  const lineOf = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const typeOnly =
        !!c &&
        (c.isTypeOnly ||
          (!c.name &&
            !!c.namedBindings &&
            ts.isNamedImports(c.namedBindings) &&
            c.namedBindings.elements.length > 0 &&
            c.namedBindings.elements.every((e) => e.isTypeOnly)));
      out.push({ line: lineOf(n), spec: n.moduleSpecifier.text, typeOnly, dynamic: false });
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      out.push({ line: lineOf(n), spec: n.moduleSpecifier.text, typeOnly: n.isTypeOnly, dynamic: false });
    } else if (
      ts.isCallExpression(n) &&
      n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments.length === 1 &&
      ts.isStringLiteralLike(n.arguments[0])
    ) {
      out.push({ line: lineOf(n), spec: n.arguments[0].text, typeOnly: false, dynamic: true });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

function appImports(dirs: string[]): Import[] {
  const out: Import[] = [];
  for (const d of dirs) {
    for (const file of walk(join(repoRoot, d), (n) => TS_SOURCE.test(n) && !n.endsWith('.d.ts'))) {
      for (const i of fileImports(file, readFileSync(file, 'utf8'))) {
        const target = resolveImport(file, i.spec);
        if (!target) continue;
        out.push({ ...i, file: toPosix(relative(repoRoot, file)), target: toPosix(relative(repoRoot, target)) });
      }
    }
  }
  return out;
}

// Static imports only: a dynamic import() loads later and is how a module reaches one above it on purpose;
// type-only imports count, a cycle of types is a cycle of design.
function importGraph(imports: Import[]): Graph {
  const g: Graph = new Map();
  for (const i of imports) if (!i.dynamic) addEdge(g, i.file, i.target);
  return g;
}

// ---- the tests ------------------------------------------------------------------------------------------------

describe('the cycle and layer checks themselves', () => {
  // 'a>b b>c': the edges a → b and b → c.
  const graph = (edges: string) => {
    const g: Graph = new Map();
    for (const e of edges.split(' ')) {
      const [a, b] = e.split('>');
      addEdge(g, a, b);
    }
    return g;
  };

  test('a cycle is found and given as a closed path; a DAG has none', () => {
    assert.deepEqual(findCycles(graph('a>b b>c c>a c>d')), [['a', 'b', 'c', 'a']]);
    assert.deepEqual(findCycles(graph('a>b b>c a>c')), []);
    assert.deepEqual(findCycles(graph('x>x')), [['x', 'x']]);
    // Two separate cycles, and the shortest path around a component with a chord.
    assert.deepEqual(findCycles(graph('a>b b>a p>q q>r r>p q>p')), [
      ['a', 'b', 'a'],
      ['p', 'q', 'p'],
    ]);
  });

  test('an include into a layer above, or sideways, is a violation; one below (transitively) is not', () => {
    const layers = { core: [], kv: ['core'], backend: ['kv'], model: ['core'] };
    const inc = (file: string, target: string): Include => ({ file: `native/src/${file}`, line: 1, target });
    assert.deepEqual(layerViolations([inc('backend/a.h', 'core/error.h'), inc('backend/a.h', 'kv/x.h')], layers), []);
    assert.deepEqual(layerViolations([inc('backend/a.h', 'model/model.h')], layers), [
      'backend/ → model/: native/src/backend/a.h:1 includes "model/model.h"',
    ]);
    assert.equal(layerViolations([inc('core/a.h', 'kv/x.h')], layers).length, 1);
    assert.equal(layerViolations([inc('gpu/a.h', 'core/x.h')], layers).length, 1, 'a folder not in the table');
    assert.throws(() => allowedLayers({ a: ['b'], b: ['a'] }), /cycle: a → b → a/);
  });

  test('imports are read with their kind: static, type-only, re-export, dynamic', () => {
    const found = fileImports(
      'x.ts',
      [
        "import a from './a.ts';",
        "import type { B } from './b.ts';",
        "import { type C, type D } from './c.ts';",
        "export { e } from './e.ts';",
        "const f = await import('./f.ts');",
        "// import g from './g.ts';",
        'const s = "import h from \'./h.ts\'";',
      ].join('\n'),
    );
    assert.deepEqual(
      found.map((i) => [i.spec, i.typeOnly, i.dynamic]),
      [
        ['./a.ts', false, false],
        ['./b.ts', true, false],
        ['./c.ts', true, false],
        ['./e.ts', false, false],
        ['./f.ts', false, true],
      ],
    );
  });
});

describe('native/src: layers', () => {
  const src = join(repoRoot, 'native/src');
  const includes = nativeIncludes(src);

  test('every folder of native/src is a layer of the table', () => {
    const folders = readdirSync(src).filter((f) => statSync(join(src, f)).isDirectory());
    const missing = folders.filter((f) => !(f in NATIVE_LAYERS));
    assert.deepEqual(missing, [], `place these folders in NATIVE_LAYERS: ${missing.join(', ')}`);
  });

  test('a folder includes only the layers below it (nothing in backend/ includes model/)', () => {
    const bad = layerViolations(includes, NATIVE_LAYERS);
    assert.deepEqual(bad, [], `includes against the layering:\n  ${bad.join('\n  ')}`);
  });

  test('no include cycle between folders', () => {
    const cycles = findCycles(folderGraph(includes));
    assert.deepEqual(cycles, [], `folder cycles:\n  ${cycles.map((c) => c.join(' → ')).join('\n  ')}`);
  });

  for (const gpu of ['native/cuda', 'native/vulkan']) {
    test(`${gpu} sees the engine only through backend/gpu-abi.h`, () => {
      const bad = nativeIncludes(join(repoRoot, gpu))
        // the shaders' SPIR-V, compiled into the build folder (*.spv.inc), is the library's own
        .filter(
          (i) => !i.target.startsWith('../') && i.target !== 'backend/gpu-abi.h' && !i.target.endsWith('.spv.inc'),
        )
        .map((i) => `${i.file}:${i.line} includes "${i.target}"`);
      assert.deepEqual(bad, [], bad.join('\n'));
    });
  }
});

describe('electron/ and renderer/src/: imports', () => {
  const imports = appImports(['electron', 'renderer/src']);

  test('the graph was read', () => {
    // A parser that found nothing would pass every check below.
    assert.ok(imports.length > 200, `only ${imports.length} imports found`);
    assert.ok(imports.some((i) => i.file === 'electron/main.ts'));
  });

  test('no import cycle between files', () => {
    const cycles = findCycles(importGraph(imports));
    assert.deepEqual(cycles, [], `import cycles:\n  ${cycles.map((c) => c.join(' → ')).join('\n  ')}`);
  });

  // Product code only: a test of the renderer may read fixtures through the app core's parsers.
  const product = imports.filter((i) => !/\.test\.tsx?$/.test(i.file));

  test('the renderer reaches the app core only through electron/api/ and electron/shared/', () => {
    const bad = product
      .filter(
        (i) =>
          i.file.startsWith('renderer/src/') &&
          i.target.startsWith('electron/') &&
          !i.target.startsWith('electron/api/') &&
          !i.target.startsWith('electron/shared/'),
      )
      .map((i) => `${i.file}:${i.line} imports ${i.target}`);
    assert.deepEqual(bad, [], bad.join('\n'));
  });

  test('electron/shared/ holds pure rules: it imports nothing else of the app and no Node module', () => {
    const shared = walk(join(repoRoot, 'electron/shared'), (n) => TS_SOURCE.test(n)).map((f) =>
      toPosix(relative(repoRoot, f)),
    );
    assert.ok(shared.length >= 8, `only ${shared.length} files in electron/shared`);
    const bad = product
      .filter((i) => i.file.startsWith('electron/shared/') && !i.target.startsWith('electron/shared/'))
      .map((i) => `${i.file}:${i.line} imports ${i.target}`);
    for (const f of shared)
      for (const i of fileImports(f, readFileSync(join(repoRoot, f), 'utf8')))
        if (i.spec.startsWith('node:') || /^(fs|path|os|crypto|child_process|worker_threads)$/.test(i.spec))
          bad.push(`${f}:${i.line} imports ${i.spec}`);
    assert.deepEqual(bad, [], bad.join('\n'));
  });

  test('electron/api/ and electron/engine/ do not lean on each other', () => {
    const bad = product
      .filter(
        (i) =>
          (i.file.startsWith('electron/api/') && i.target.startsWith('electron/engine/')) ||
          (i.file.startsWith('electron/engine/') && i.target.startsWith('electron/api/')),
      )
      .map((i) => `${i.file}:${i.line} imports ${i.target}`);
    assert.deepEqual(bad, [], bad.join('\n'));
  });

  test('renderer/src/lib/ holds pure helpers: no store, no hook over one', () => {
    const bad = product
      .filter((i) => i.file.startsWith('renderer/src/lib/') && i.target.startsWith('renderer/src/stores/'))
      .map((i) => `${i.file}:${i.line} imports ${i.target}`);
    assert.deepEqual(bad, [], bad.join('\n'));
  });

  test('renderer/src/api/ imports no store', () => {
    const bad = imports
      .filter((i) => i.file.startsWith('renderer/src/api/') && i.target.startsWith('renderer/src/stores/'))
      .map((i) => `${i.file}:${i.line} imports ${i.target}`);
    assert.deepEqual(bad, [], bad.join('\n'));
  });
});
