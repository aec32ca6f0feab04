// The window: the sidebar, the main pane (or the models and settings page), banners for the engine and the
// connection, notices, the drop zone for imports, dialogs, and the keyboard shortcuts.
import { useEffect, useState, type DragEvent } from 'react';

import type { EngineStatus } from '../../../electron/api/contract.ts';
import { api, errorMessage } from '../api/client.ts';
import { runShortcut } from '../stores/actions.ts';
import { importFiles } from '../stores/documents.ts';
import { setEngineStatus, useEngine } from '../stores/engine.ts';
import { dismiss, go, notify, useUi, type Route } from '../stores/ui.ts';
import { matchShortcut } from '../lib/shortcuts.ts';
import { ConfirmDialog, HelpOverlay } from './Dialogs.tsx';
import { MainPane } from './MainPane.tsx';
import { ModelsPage } from './ModelsPage.tsx';
import { SettingsPage } from './SettingsPage.tsx';
import { Sidebar } from './Sidebar.tsx';
import { SidebarToggle, useSidebar } from './SidebarToggle.tsx';
import { useThemeEffect } from './theme.ts';

function isTextField(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName;
  return (
    tag === 'TEXTAREA' ||
    tag === 'SELECT' ||
    (tag === 'INPUT' && !['checkbox', 'radio', 'button', 'submit'].includes((el as HTMLInputElement).type)) ||
    (el as HTMLElement).isContentEditable
  );
}

export function useShortcuts(): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented) return;
      // Dialogs handle their own keys (Escape closes them).
      if (useUi.getState().confirm) return;
      const action = matchShortcut({
        key: e.key,
        code: e.code,
        ctrlKey: e.ctrlKey,
        metaKey: e.metaKey,
        shiftKey: e.shiftKey,
        altKey: e.altKey,
        inTextField: isTextField(document.activeElement),
      });
      if (action && runShortcut(action)) e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}

/** The engine crashed too often to restart by itself: the last error, and a Retry that starts it again. */
function EngineDownBanner({ status }: { status: EngineStatus }) {
  const [retrying, setRetrying] = useState(false);
  const retry = async () => {
    setRetrying(true);
    try {
      setEngineStatus(await api().call('engine.restart', {}));
    } catch (e) {
      notify(`The engine did not start: ${errorMessage(e)}`);
    } finally {
      setRetrying(false);
    }
  };
  return (
    <div className="banner error" role="alert" data-testid="engine-down">
      The engine is stopped{status.message ? `: ${status.message}` : ''}. Your chats are safe.{' '}
      <button type="button" className="link-button" onClick={() => void retry()} disabled={retrying}>
        {retrying ? 'Starting the engine…' : 'Retry'}
      </button>
    </div>
  );
}

function Banners() {
  const status = useEngine((s) => s.status);
  const connected = useEngine((s) => s.connected);
  const everConnected = useEngine((s) => s.everConnected);
  const restoredAt = useEngine((s) => s.restoredAt);
  const [, force] = useState(0);
  useEffect(() => {
    if (!restoredAt) return;
    const t = setTimeout(() => force((n) => n + 1), 4000);
    return () => clearTimeout(t);
  }, [restoredAt]);
  const showRestored = restoredAt !== null && Date.now() - restoredAt < 4000 && connected;
  return (
    <div className="banners">
      {connected === false && everConnected && (
        <div className="banner warn" role="alert" data-testid="connection-lost">
          The connection to Folio was lost. Reconnecting…
        </div>
      )}
      {showRestored && (
        <div className="banner ok" role="status">
          Connected again.
        </div>
      )}
      {status?.state === 'crashed' && !status.willRestart && <EngineDownBanner status={status} />}
      {status?.state === 'crashed' && status.willRestart && (
        <div className="banner error" role="alert" data-testid="engine-crashed">
          The engine stopped unexpectedly{status.message ? ` (${status.message})` : ''}. It is being restarted; your
          chats are safe.
        </div>
      )}
      {status?.state === 'starting' && status.restarts > 0 && (
        <div className="banner warn" role="status">
          Restarting the engine (restart {status.restarts})…
        </div>
      )}
    </div>
  );
}

function Notices() {
  const notices = useUi((s) => s.notices);
  return (
    <div className="notices" aria-live="polite">
      {notices.map((n) => (
        <div key={n.id} className={`toast ${n.kind}`} role={n.kind === 'error' ? 'alert' : 'status'}>
          <span>{n.text}</span>
          {n.action && (
            <button
              type="button"
              className="link-button"
              onClick={() => {
                go(n.action!.route as Route);
                dismiss(n.id);
              }}
            >
              {n.action.label}
            </button>
          )}
          <button type="button" className="icon-button" aria-label="Dismiss" onClick={() => dismiss(n.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}

/** Drag and drop of files anywhere on the window imports them. */
function useDropZone(): { over: boolean; handlers: Record<string, (e: DragEvent) => void> } {
  const [over, setOver] = useState(false);
  const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes('Files');
  return {
    over,
    handlers: {
      onDragOver: (e) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        e.dataTransfer.dropEffect = 'copy';
        setOver(true);
      },
      onDragLeave: (e) => {
        if (e.currentTarget === e.target || !(e.currentTarget as Node).contains(e.relatedTarget as Node))
          setOver(false);
      },
      onDrop: (e) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        setOver(false);
        const files = Array.from(e.dataTransfer.files);
        if (files.length) void importFiles(files);
      },
    },
  };
}

function SettingsShell() {
  const route = useUi((s) => s.route);
  return (
    <div className="page-shell">
      <header className="page-header">
        <h1>{route === 'models' ? 'Models' : 'Settings'}</h1>
        <nav className="tabs" aria-label="Models and settings">
          {(['models', 'settings'] as const).map((r) => (
            <button
              key={r}
              type="button"
              className="tab-link"
              aria-current={route === r ? 'page' : undefined}
              onClick={() => go(r)}
            >
              {r === 'models' ? 'Models' : 'Settings'}
            </button>
          ))}
        </nav>
      </header>
      {route === 'models' ? <ModelsPage /> : <SettingsPage />}
    </div>
  );
}

export function App({ loadError }: { loadError?: string | null }) {
  useThemeEffect();
  useShortcuts();
  const route = useUi((s) => s.route);
  const drop = useDropZone();
  const sidebar = useSidebar();
  return (
    <div
      className="app"
      data-sidebar={sidebar.overlay ? 'overlay' : sidebar.visible ? 'shown' : 'hidden'}
      {...drop.handlers}
    >
      <a className="skip-link" href="#main">
        Skip to the main content
      </a>
      {sidebar.visible && (
        <div id="sidebar" className="sidebar-slot">
          <Sidebar />
        </div>
      )}
      <main id="main" className="main" tabIndex={-1}>
        <SidebarToggle />
        <Banners />
        {loadError && (
          <div className="banner error" role="alert">
            Folio could not load: {loadError}
          </div>
        )}
        {route === 'main' ? <MainPane /> : <SettingsShell />}
      </main>
      {drop.over && (
        <div className="drop-overlay" aria-hidden="true">
          <div>Drop to import into the library</div>
        </div>
      )}
      <Notices />
      <ConfirmDialog />
      <HelpOverlay />
    </div>
  );
}
