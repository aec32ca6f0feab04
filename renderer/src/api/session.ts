// The web host's browser session (a browser only; the desktop app talks IPC and has none). The page is
// signed in by a cookie that opening the token link sets; without it every API route answers 401, so the
// UI asks for the token instead of retrying a connection that cannot succeed.
import { SESSION_ROUTE } from '../../../electron/api/contract.ts';

type Fetch = typeof fetch;

/** 'signed-in', 'signed-out', or 'unreachable' (the server is down: the connection retries by itself). */
export async function sessionState(fetchImpl: Fetch = fetch): Promise<'signed-in' | 'signed-out' | 'unreachable'> {
  try {
    const r = await fetchImpl(SESSION_ROUTE, { cache: 'no-store' });
    if (!r.ok) return 'unreachable';
    return ((await r.json()) as { signedIn?: unknown }).signedIn === true ? 'signed-in' : 'signed-out';
  } catch {
    return 'unreachable';
  }
}

/** Signs this browser in with the API token; resolves with null, or the reason it could not. */
export async function signIn(token: string, fetchImpl: Fetch = fetch): Promise<string | null> {
  let r: Response;
  try {
    r = await fetchImpl(SESSION_ROUTE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: token.trim() }),
    });
  } catch {
    return 'The Folio server cannot be reached: is folio serve still running?';
  }
  if (r.ok) return null;
  if (r.status === 401) return "That is not this server's token.";
  const body = (await r.json().catch(() => null)) as { error?: { message?: string } } | null;
  return body?.error?.message ?? `The server answered ${r.status}.`;
}
