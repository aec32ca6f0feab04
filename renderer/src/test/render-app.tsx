// Renders the whole app over a fake API, as main.tsx does over the real one.
import { render, screen } from '@testing-library/react';

import type { WsApi } from '../../../electron/api/ws-client.ts';
import { startApp } from '../wire.ts';
import { App } from '../components/App.tsx';
import type { FakeApi } from './fake-api.ts';

export async function renderApp(api: FakeApi, ws: WsApi | null = null) {
  const stop = startApp(api, ws);
  const r = render(<App />);
  await screen.findByRole('heading', { name: 'Library' });
  return { ...r, stop };
}
