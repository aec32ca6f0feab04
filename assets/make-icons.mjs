#!/usr/bin/env node
// Renders Folio's app icons from the two SVGs with rsvg-convert (Debian: apt-get install librsvg2-bin)
// and packs the Windows .ico and the macOS .icns itself (both hold PNGs):
//   icons/NxN.png  16…1024 px from icon-full.svg: the Linux icon set (electron-builder's linux.icon), the window icon
//   icon.ico       16…256 px from icon-full.svg: Windows (the tile fills the square there)
//   icon.icns      16…1024 px from icon.svg: macOS (the tile on Apple's 824/1024 grid, with its margin)
// Run: node assets/make-icons.mjs. The outputs are committed; run it again after changing an SVG.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const LINUX_SIZES = [16, 24, 32, 48, 64, 128, 256, 512, 1024];
const ICO_SIZES = [16, 24, 32, 48, 64, 128, 256];
// ICNS entry types holding PNGs, with their pixel size (the @2x types are the Retina variants).
const ICNS_TYPES = [
  ['icp4', 16],
  ['icp5', 32],
  ['icp6', 64],
  ['ic07', 128],
  ['ic08', 256],
  ['ic09', 512],
  ['ic10', 1024],
  ['ic11', 32],
  ['ic12', 64],
  ['ic13', 256],
  ['ic14', 512],
];

function render(svg, size) {
  return execFileSync('rsvg-convert', ['-w', String(size), '-h', String(size), join(here, svg)], {
    maxBuffer: 64 << 20,
  });
}

function ico(pngs) {
  const header = Buffer.alloc(6);
  header.writeUInt16LE(0, 0);
  header.writeUInt16LE(1, 2); // icon
  header.writeUInt16LE(pngs.length, 4);
  const dir = Buffer.alloc(16 * pngs.length);
  let offset = 6 + dir.length;
  pngs.forEach(([size, png], i) => {
    const e = i * 16;
    dir.writeUInt8(size >= 256 ? 0 : size, e); // 0 means 256
    dir.writeUInt8(size >= 256 ? 0 : size, e + 1);
    dir.writeUInt8(0, e + 2); // no palette
    dir.writeUInt8(0, e + 3);
    dir.writeUInt16LE(1, e + 4); // planes
    dir.writeUInt16LE(32, e + 6); // bits per pixel
    dir.writeUInt32LE(png.length, e + 8);
    dir.writeUInt32LE(offset, e + 12);
    offset += png.length;
  });
  return Buffer.concat([header, dir, ...pngs.map(([, png]) => png)]);
}

function icns(entries) {
  const parts = entries.map(([type, png]) => {
    const h = Buffer.alloc(8);
    h.write(type, 0, 'latin1');
    h.writeUInt32BE(png.length + 8, 4);
    return Buffer.concat([h, png]);
  });
  const body = Buffer.concat(parts);
  const h = Buffer.alloc(8);
  h.write('icns', 0, 'latin1');
  h.writeUInt32BE(body.length + 8, 4);
  return Buffer.concat([h, body]);
}

mkdirSync(join(here, 'icons'), { recursive: true });
const full = new Map(LINUX_SIZES.map((s) => [s, render('icon-full.svg', s)]));
for (const [s, png] of full) writeFileSync(join(here, 'icons', `${s}x${s}.png`), png);
writeFileSync(join(here, 'icon.ico'), ico(ICO_SIZES.map((s) => [s, full.get(s)])));
const mac = new Map();
for (const [, s] of ICNS_TYPES) if (!mac.has(s)) mac.set(s, render('icon.svg', s));
writeFileSync(join(here, 'icon.icns'), icns(ICNS_TYPES.map(([t, s]) => [t, mac.get(s)])));
writeFileSync(join(here, 'icon.png'), mac.get(1024));
console.log(
  `icons: ${LINUX_SIZES.length} PNGs in assets/icons, icon.ico (${ICO_SIZES.join(', ')}), icon.icns, icon.png (${readFileSync(join(here, 'icon.png')).length} bytes)`,
);
