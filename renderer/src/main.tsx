// The renderer's entry: connect to the API (window.folio in the desktop app, the web host's WebSocket in a
// browser), wire the stores to its events, and render.
import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

import { resolveApi } from './api/client.ts';
import { startApp } from './wire.ts';
import { App } from './components/App.tsx';
import './styles/app.css';

function Root() {
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const { api, ws } = resolveApi();
    const stop = startApp(api, ws, setError);
    return () => {
      stop();
      ws?.close();
    };
  }, []);
  return <App loadError={error} />;
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Root />
  </StrictMode>,
);
