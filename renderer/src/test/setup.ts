// Test setup: Testing Library cleanup, fresh stores, and the browser pieces jsdom lacks (matchMedia, a
// canvas context stub, the clipboard).
import { cleanup } from '@testing-library/react';
import { afterEach, beforeEach, vi } from 'vitest';

import { setApi } from '../api/client.ts';
import { resetChats } from '../stores/chats.ts';
import { resetDocuments } from '../stores/documents.ts';
import { useEngine } from '../stores/engine.ts';
import { resetInspector } from '../stores/inspector.ts';
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
