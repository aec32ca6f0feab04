// Test setup: Testing Library cleanup, fresh stores, and the browser pieces jsdom lacks (matchMedia, a
// canvas context stub, the clipboard).
import { cleanup } from '@testing-library/react';
import { afterEach, beforeEach, vi } from 'vitest';

import { setApi } from '../api/client.ts';
import { resetChats } from '../stores/chats.ts';
import { resetDocuments } from '../stores/documents.ts';
import { resetDuplicate } from '../stores/duplicate.ts';
import { useEngine } from '../stores/engine.ts';
import { resetInspector } from '../stores/inspector.ts';
import { resetLibrary } from '../stores/library.ts';
import { resetModels } from '../stores/models.ts';
import { useSettings } from '../stores/settings.ts';
import { useTasks } from '../stores/tasks.ts';
import { resetUi } from '../stores/ui.ts';

beforeEach(() => {
  resetUi();
  resetDocuments();
  resetChats();
  resetModels();
  resetInspector();
  resetLibrary();
  resetDuplicate();
  useTasks.setState({ byId: {} }, true);
  useSettings.setState({ settings: null, saving: false }, true);
  useEngine.setState({ status: null, connected: null, everConnected: false, restoredAt: null }, true);
  if (!window.matchMedia)
    Object.defineProperty(window, 'matchMedia', {
      configurable: true,
      value: (query: string) => ({
        matches: false,
        media: query,
        addEventListener() {},
        removeEventListener() {},
        addListener() {},
        removeListener() {},
        onchange: null,
        dispatchEvent: () => false,
      }),
    });
  // jsdom has no canvas: tests that draw install a recording context; others get none.
  HTMLCanvasElement.prototype.getContext = (() => null) as never;
  Object.defineProperty(navigator, 'clipboard', { configurable: true, value: { writeText: vi.fn(async () => {}) } });
});

afterEach(() => {
  cleanup();
  setApi(null);
  vi.useRealTimers();
});

// jsdom 26 (the last release that runs on Node 20) has no Blob.arrayBuffer: read blobs with a FileReader.
if (typeof Blob.prototype.arrayBuffer !== 'function') {
  Blob.prototype.arrayBuffer = function arrayBuffer(this: Blob): Promise<ArrayBuffer> {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(reader.result as ArrayBuffer);
      reader.onerror = () => reject(reader.error);
      reader.readAsArrayBuffer(this);
    });
  };
}

// jsdom has no CSS.escape, which user-event uses to find a radio group when arrow keys move through it.
// CSSOM's serialize-an-identifier, as browsers implement it.
if (typeof globalThis.CSS?.escape !== 'function') {
  const cssEscape = (value: string): string => {
    let out = '';
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      const digit = c >= 0x30 && c <= 0x39;
      if (c === 0) out += '\uFFFD';
      else if ((c >= 0x1 && c <= 0x1f) || c === 0x7f || (i === 0 && digit) || (i === 1 && digit && value[0] === '-'))
        out += `\\${c.toString(16)} `;
      else if (i === 0 && value === '-') out += '\\-';
      else if (c >= 0x80 || c === 0x2d || c === 0x5f || digit || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a))
        out += value[i];
      else out += `\\${value[i]}`;
    }
    return out;
  };
  Object.defineProperty(globalThis, 'CSS', { configurable: true, value: { ...globalThis.CSS, escape: cssEscape } });
}

// jsdom lays nothing out and has no scrollIntoView; the views call it to bring a hit or a page into view.
if (!Element.prototype.scrollIntoView) Element.prototype.scrollIntoView = () => {};
