// The main window's size and position, remembered in the library folder (window-state.json). Restored
// only when the window would be visible: its title bar must lie on one of the displays now connected (a
// monitor unplugged since, a resolution change), otherwise only the size is kept and the window centred.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { DEFAULT_HEIGHT, DEFAULT_WIDTH, MIN_HEIGHT, MIN_WIDTH } from './security.ts';

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface WindowState {
  x?: number;
  y?: number;
  width: number;
  height: number;
  maximized: boolean;
}

export const WINDOW_STATE_FILE = 'window-state.json';

/** How much of the title bar must be on a display for the saved position to be used. */
const GRIP_WIDTH = 120;
const GRIP_HEIGHT = 32;

export function windowStatePath(dataDir: string): string {
  return join(dataDir, WINDOW_STATE_FILE);
}

function finite(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n);
}

/** The saved state, or null when there is none or it is unreadable. */
export function loadWindowState(dataDir: string): WindowState | null {
  try {
    const raw = JSON.parse(readFileSync(windowStatePath(dataDir), 'utf8')) as Record<string, unknown>;
    if (!finite(raw.width) || !finite(raw.height)) return null;
    const s: WindowState = { width: raw.width, height: raw.height, maximized: raw.maximized === true };
    if (finite(raw.x) && finite(raw.y)) Object.assign(s, { x: raw.x, y: raw.y });
    return s;
  } catch {
    return null;
  }
}

export function saveWindowState(dataDir: string, state: WindowState): void {
  const path = windowStatePath(dataDir);
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path + '.tmp', JSON.stringify(state), { mode: 0o600 });
    renameSync(path + '.tmp', path);
  } catch (e) {
    console.error(`folio: could not save the window's position: ${(e as Error).message}`);
  }
}

function overlap(a: Rect, b: Rect): { width: number; height: number } {
  return {
    width: Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x),
    height: Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y),
  };
}

/** True when the window's title bar lies on one of the displays' work areas enough to grab it. */
export function isVisibleOn(bounds: Rect, workAreas: Rect[]): boolean {
  const titleBar: Rect = { x: bounds.x, y: bounds.y, width: bounds.width, height: GRIP_HEIGHT };
  return workAreas.some((area) => {
    const o = overlap(titleBar, area);
    // The top edge itself must be on the display (a window above the screen cannot be moved back).
    return o.width >= Math.min(GRIP_WIDTH, bounds.width) && o.height >= GRIP_HEIGHT / 2 && bounds.y >= area.y;
  });
}

/**
 * The bounds to open the window with: the saved ones when visible on the current displays; otherwise the
 * saved size (shrunk to fit the largest display) without a position, so the window is centred.
 */
export function restoreBounds(
  saved: WindowState | null,
  workAreas: Rect[],
): { bounds: { x?: number; y?: number; width: number; height: number }; maximized: boolean } {
  if (!saved) return { bounds: { width: DEFAULT_WIDTH, height: DEFAULT_HEIGHT }, maximized: false };
  const maxW = Math.max(MIN_WIDTH, ...workAreas.map((a) => a.width));
  const maxH = Math.max(MIN_HEIGHT, ...workAreas.map((a) => a.height));
  const width = Math.round(Math.min(Math.max(saved.width, MIN_WIDTH), maxW));
  const height = Math.round(Math.min(Math.max(saved.height, MIN_HEIGHT), maxH));
  if (saved.x !== undefined && saved.y !== undefined) {
    const bounds = { x: Math.round(saved.x), y: Math.round(saved.y), width, height };
    if (isVisibleOn(bounds, workAreas)) return { bounds, maximized: saved.maximized };
  }
  return { bounds: { width, height }, maximized: saved.maximized };
}

/** What the shell needs of a BrowserWindow to follow its bounds. */
export interface TrackedWindow {
  getNormalBounds(): Rect;
  isMaximized(): boolean;
  isMinimized(): boolean;
  isFullScreen(): boolean;
  isDestroyed(): boolean;
  on(event: 'resize' | 'move' | 'close' | 'maximize' | 'unmaximize', listener: () => void): unknown;
}

/**
 * Saves the window's state when it closes, and (debounced) after it moves or is resized, so a crash
 * loses little. Returns `save` for the shutdown path.
 */
export function trackWindowState(window: TrackedWindow, dataDir: string, debounceMs = 500): { save(): void } {
  let timer: NodeJS.Timeout | null = null;
  const save = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (window.isDestroyed() || window.isMinimized() || window.isFullScreen()) return;
    const b = window.getNormalBounds();
    saveWindowState(dataDir, { x: b.x, y: b.y, width: b.width, height: b.height, maximized: window.isMaximized() });
  };
  const later = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(save, debounceMs);
    timer.unref?.();
  };
  window.on('resize', later);
  window.on('move', later);
  window.on('maximize', later);
  window.on('unmaximize', later);
  window.on('close', save);
  return { save };
}
