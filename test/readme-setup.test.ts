// The README's two commands on a fresh machine (issue 40, item 8): its set-up line names every system package
// the tests need, so that a newcomer who follows it runs what CI runs (CI installs exactly that line, .ci/run).
// Every place that says which package a check needs ("Debian's <name> package", "apt-get install <name>": a
// test's skip reason, the format check) is read from the tree, and each package it names must be on the line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { repoRoot } from './helpers/shared.ts';

/** The packages of the README's `sudo apt-get install ...` line in its "Set up" section, as .ci/run reads it. */
function setupPackages(): string[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Set up'), readme.indexOf('\n## ', readme.indexOf('## Set up') + 1));
  const line = section.match(/`sudo apt-get install ([^`]*)`/);
  assert.ok(line, "the README's Set up section has a `sudo apt-get install ...` line");
  return line[1].trim().split(/\s+/);
}

/** Every package the tree says a check needs: in the tests, their helpers and the scripts npm test runs. */
function neededPackages(): Map<string, string> {
  const files = [
    ...readdirSync(join(repoRoot, 'test'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join('test', f)),
    ...readdirSync(join(repoRoot, 'test/helpers')).map((f) => join('test/helpers', f)),
    ...readdirSync(join(repoRoot, 'scripts')).map((f) => join('scripts', f)),
  ];
  const needed = new Map<string, string>();
  for (const f of files) {
    const text = readFileSync(join(repoRoot, f), 'utf8');
    for (const m of text.matchAll(/Debian's ([a-z][\w.+-]*(?: and [a-z][\w.+-]*)*) packages?/g))
      for (const p of m[1].split(' and ')) needed.set(p, f);
    for (const m of text.matchAll(/apt-get install ([a-z][\w.+-]*(?: [a-z][\w.+-]*)*)/g))
      for (const p of m[1].split(' ')) needed.set(p, f);
  }
  return needed;
}

test("the README's set-up line names every system package a test or the format check needs", () => {
  const line = setupPackages();
  const needed = neededPackages();
  // The ones a newcomer's npm test stopped at or silently skipped (the walk of issue 40) are all said somewhere.
  for (const p of ['chromium', 'clang-format', 'glslc', 'libvulkan-dev', 'mesa-vulkan-drivers'])
    assert.ok(needed.has(p), `some check names ${p} as what it needs`);
  for (const [p, where] of needed)
    assert.ok(line.includes(p), `${where} needs ${p}, which the README does not install`);
});
