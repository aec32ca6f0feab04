// Opening the UI in the user's browser when `folio serve` starts. The sign-in link holds the API token, so it
// is not put on an opener's command line (which other users can read in the process list): the browser is
// given a file, readable by this user only, that forwards to the link, as Jupyter's server does.
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Whether a browser can be shown here: a desktop session (macOS, Windows, or X11 / Wayland on Linux). */
export function canOpenBrowser(env: NodeJS.ProcessEnv = process.env, platform = process.platform): boolean {
  if (platform === 'darwin' || platform === 'win32') return true;
  return !!(env.DISPLAY || env.WAYLAND_DISPLAY);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * Writes the forwarding page into `dir` (a private folder of the library) and hands it to the system's opener;
 * returns the page's path (remove it when the server stops), or null when the opener could not be started.
 */
export function openSignInPage(signInUrl: string, dir: string, port: number): string | null {
  const page = join(dir, `open-folio-${port}.html`);
  const href = escapeHtml(signInUrl);
  rmSync(page, { force: true }); // a leftover of another user's run would keep its owner and rights
  writeFileSync(
    page,
    `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${href}">` +
      `<title>Folio</title><p><a href="${href}">Open Folio</a></p>\n`,
    { mode: 0o600, flag: 'wx' },
  );
  const target = pathToFileURL(page).href;
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [target]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', target]]
        : ['xdg-open', [target]];
  try {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
    child.on('error', () => {}); // no opener installed: the printed link is there
    child.unref();
    return page;
  } catch {
    return null;
  }
}
