// What a browser sees before it is signed in to `folio serve`: why the token is asked for, where it is, and a
// field to paste it into. Opening the link the server printed signs in without this page.
import { useState, type FormEvent } from 'react';

import { signIn } from '../api/session.ts';

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    const problem = await signIn(token);
    setBusy(false);
    if (problem === null) onSignedIn();
    else setError(problem);
  };
  return (
    <main className="sign-in" id="main">
      <form className="card sign-in-card" onSubmit={(e) => void submit(e)}>
        <h1>Sign in to Folio</h1>
        <p>
          This Folio server answers only to its access token, so that other programs and other users of this computer
          cannot read your library. Open the link <code>folio serve</code> printed when it started (it ends in{' '}
          <code>?token=…</code>), or paste the token: it is in the file <code>api-token</code> of the Folio library.
        </p>
        <label htmlFor="sign-in-token">Access token</label>
        <input
          id="sign-in-token"
          type="password"
          autoComplete="off"
          value={token}
          onChange={(e) => setToken(e.target.value)}
          aria-invalid={error !== null}
          aria-describedby={error ? 'sign-in-error' : undefined}
        />
        {error && (
          <p id="sign-in-error" className="field-error" role="alert">
            {error}
          </p>
        )}
        <div>
          <button type="submit" className="button primary" disabled={busy || token.trim() === ''}>
            Sign in
          </button>
        </div>
      </form>
    </main>
  );
}
