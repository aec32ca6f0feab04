import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { setApi } from '../api/client.ts';
import { setModels } from '../stores/models.ts';
import { setSettings } from '../stores/settings.ts';
import { createFakeApi, model, settings } from '../test/fake-api.ts';
import { ApiAccess } from './ApiAccess.tsx';

describe('API access', () => {
  it("shows the web host's base URL, its token with a copy button, and a curl example", async () => {
    setApi(
      createFakeApi({ 'server.info': () => ({ apiUrl: 'http://127.0.0.1:8080', apiToken: 'tok-0123456789abcdef' }) }),
    );
    render(<ApiAccess />);
    expect((await screen.findByTestId('api-url')).textContent).toBe('http://127.0.0.1:8080/v1');
    expect((screen.getByLabelText('Token') as HTMLInputElement).value).toBe('tok-0123456789abcdef');
    expect(screen.getByTestId('api-example').textContent).toMatch(
      /^curl http:\/\/127\.0\.0\.1:8080\/v1\/chat\/completions -H 'Authorization: Bearer tok-0123456789abcdef'/,
    );
    await userEvent.click(screen.getByRole('button', { name: 'Copy' }));
    expect(navigator.clipboard.writeText).toHaveBeenCalledWith('tok-0123456789abcdef');
  });

  it('names in its example the chat model as GET /v1/models lists it (by name), not an alias', async () => {
    setApi(createFakeApi({ 'server.info': () => ({ apiUrl: 'http://127.0.0.1:8080', apiToken: 'tok' }) }));
    setSettings(settings({ modelId: 'm2' }));
    setModels([
      model({ id: 'm1', name: 'tiny' }),
      model({ id: 'm2', name: "stories260K's" }),
      model({ id: 'm3', name: 'broken', supported: false }),
    ]);
    render(<ApiAccess />);
    const example = (await screen.findByTestId('api-example')).textContent!;
    // The body sits in single quotes for the shell: a quote in the name is closed, escaped and reopened.
    expect(example).toContain(`-d '{"model":"stories260K'\\''s","messages":[{"role":"user","content":"Hello"}]}'`);

    // The chosen model is not listed (unsupported): the first one listed is.
    setSettings(settings({ modelId: 'm3' }));
    expect((await screen.findByTestId('api-example')).textContent).toContain('"model":"tiny"');
  });

  it('shows nothing in the desktop app, which serves no HTTP', async () => {
    const api = createFakeApi({ 'server.info': () => ({ apiUrl: null, apiToken: null }) });
    setApi(api);
    const { container } = render(<ApiAccess />);
    await new Promise((r) => setTimeout(r, 10));
    expect(api.callsOf('server.info')).toEqual([{}]);
    expect(container.innerHTML).toBe('');
  });
});
