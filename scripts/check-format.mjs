// The formatting and lint check of `npm test`, and `npm run format` (--write) that applies the formatters.
//   TypeScript and JavaScript: Biome (biome.jsonc), `biome ci` = formatter + linter, warnings fail too.
//   C++ and CUDA under native/: clang-format (native/.clang-format), `--dry-run --Werror`.
// Usage: node scripts/check-format.mjs [--write]
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const write = process.argv.includes('--write');

// The C++ that clang-format owns: every source and header in these folders. Generated files are not listed
// (tokenizer/unicode-tables.inc is written by native/tools/gen-unicode-tables.mjs and has no .cc/.h name).
const CXX_DIRS = ['native/src', 'native/tests', 'native/tools', 'native/cuda', 'native/vulkan'];
const CXX_EXT = /\.(cc|h|cu|cuh)$/;

function cxxFiles() {
  const files = [];
  (function walk(dir) {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && CXX_EXT.test(e.name)) files.push(relative(root, p));
    }
  })(join(root, 'native'));
  return files.filter((f) => CXX_DIRS.some((d) => f.startsWith(d + '/')));
}

// Debian 12's clang-format is version 14; where both exist, the versioned name wins so that a newer default
// does not reformat the tree differently.
function clangFormat() {
  for (const name of [process.env.CLANG_FORMAT, 'clang-format-14', 'clang-format']) {
    if (!name) continue;
    const r = spawnSync(name, ['--version'], { encoding: 'utf8' });
    if (!r.error && r.status === 0) return { name, version: r.stdout.trim() };
  }
  return null;
}

const failed = [];

const biome = join(root, 'node_modules/@biomejs/biome/bin/biome');
const biomeArgs = write ? ['format', '--write'] : ['ci', '--error-on-warnings'];
if (spawnSync(process.execPath, [biome, ...biomeArgs], { cwd: root, stdio: 'inherit' }).status !== 0)
  failed.push('biome');

const cf = clangFormat();
if (!cf) {
  console.error('check-format: clang-format not found (Debian: apt-get install clang-format; or set CLANG_FORMAT)');
  failed.push('clang-format');
} else {
  if (!/version 14\./.test(cf.version)) console.error(`check-format: ${cf.version}; the style is checked with 14`);
  const files = cxxFiles();
  const args = write ? ['-i', '--style=file'] : ['--dry-run', '--Werror', '--style=file'];
  // In batches: a command line has a length limit on every platform. A check names each file that is not
  // formatted and shows the first places, not every one of them.
  const unformatted = new Set();
  let shown = 0;
  let ok = true;
  for (let i = 0; i < files.length; i += 100) {
    const r = spawnSync(cf.name, [...args, ...files.slice(i, i + 100)], { cwd: root, encoding: 'utf8' });
    if (r.status !== 0) ok = false;
    for (const line of (r.stderr ?? '').split('\n')) {
      const m = /^(.+?):\d+:\d+: (?:error|warning): code should be clang-formatted/.exec(line);
      if (m) unformatted.add(m[1]);
      if (shown < 30 && line) {
        shown++;
        console.error(line);
      }
    }
  }
  if (unformatted.size) console.error(`clang-format: not formatted: ${[...unformatted].join(' ')}`);
  if (ok) console.log(`clang-format: ${files.length} files ${write ? 'formatted' : 'checked'}`);
  else failed.push('clang-format');
}

if (failed.length) {
  console.error(
    `check-format: ${failed.join(' and ')} failed` + (write ? '' : '; `npm run format` applies the formatters'),
  );
  process.exit(1);
}
