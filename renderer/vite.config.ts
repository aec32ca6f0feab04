// The renderer's build: root renderer/, output dist/renderer (what `folio serve` and the Electron shell load).
// base './' keeps asset URLs relative, so the same build works from the web host and from a custom protocol.
import { cpSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';

/**
 * The data pdf.js reads at run time, copied beside the build under pdfjs/ (lib/pdfjs.ts names it): the Adobe
 * CMaps (text in CJK fonts), the standard fonts' data (the 14 fonts a PDF may use without embedding them),
 * the image decoders (JPEG 2000, JBIG2) and the colour profiles.
 */
const PDFJS_DATA_DIRS = ['cmaps', 'standard_fonts', 'wasm', 'iccs'] as const;
function pdfjsData(outDir: string): Plugin {
  const pdfjsRoot = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
  return {
    name: 'folio-pdfjs-data',
    apply: 'build',
    writeBundle() {
      for (const d of PDFJS_DATA_DIRS) cpSync(join(pdfjsRoot, d), join(outDir, 'pdfjs', d), { recursive: true });
    },
  };
}

const outDir = fileURLToPath(new URL('../dist/renderer', import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  plugins: [react(), pdfjsData(outDir)],
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 800,
  },
});
