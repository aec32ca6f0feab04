// The renderer's entry: connect to the API (window.folio in the desktop app, the web host's WebSocket in a
// browser), wire the stores to its events, and render. In a browser that is not signed in to the web host
// (no session cookie), the sign-in page comes first.
import { StrictMode, useCallback, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

import { resolveApi } from './api/client.ts';
import { sessionState } from './api/session.ts';
import { startApp } from './wire.ts';
import { App } from './components/App.tsx';
import { SignIn } from './components/SignIn.tsx';
import './styles/app.css';

function Connected({ onSignedOut }: { onSignedOut: () => void }) {
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const { api, ws } = resolveApi();
    const stop = startApp(api, ws, setError);
    // A lost connection may be a session that ended (the server restarted with another token).
    const off = ws?.onConnection((c) => {
      if (!c) void sessionState().then((s) => s === 'signed-out' && onSignedOut());
    });
    return () => {
      off?.();
      stop();
      ws?.close();
    };
  }, [onSignedOut]);
  return <App loadError={error} />;
}

function Root() {
  const [state, setState] = useState<'checking' | 'signed-out' | 'signed-in'>(window.folio ? 'signed-in' : 'checking');
  const signedOut = useCallback(() => setState('signed-out'), []);
  useEffect(() => {
    if (state === 'checking')
      void sessionState().then((s) => setState(s === 'signed-out' ? 'signed-out' : 'signed-in'));
  }, [state]);
  if (state === 'checking') return null;
  if (state === 'signed-out') return <SignIn onSignedIn={() => setState('signed-in')} />;
  return <Connected onSignedOut={signedOut} />;
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Root />
  </StrictMode>,
);
