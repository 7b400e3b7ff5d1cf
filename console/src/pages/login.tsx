import { useState } from 'preact/hooks';
import { ApiError, basicAuth, request, WhoAmI } from '../api';
import { ErrorAlert, Field } from '../components';
import { useTitle } from '../util';

/** Checks the credentials with GET /v1/whoami; nothing is posted anywhere. */
export function LoginPage({ onSignedIn }: { onSignedIn: (who: WhoAmI, auth: string) => void }) {
  useTitle('Sign in');
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const auth = basicAuth(user, password);
    try {
      const who = await request<WhoAmI>('/v1/whoami', { auth });
      setPassword('');
      onSignedIn(who, auth);
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) setError('Wrong user name or password.');
      else setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="login">
      <form onSubmit={submit} class="card">
        <h1>Sign in to Kiln</h1>
        <ErrorAlert message={error} />
        <Field label="User name">
          {(id) => (
            <input
              id={id}
              name="username"
              type="text"
              autocomplete="username"
              autoFocus
              required
              value={user}
              onInput={(e) => setUser((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <Field label="Password">
          {(id) => (
            <input
              id={id}
              name="password"
              type="password"
              autocomplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
        <p class="hint">Your credentials are kept in this browser tab only, until you sign out or close it.</p>
      </form>
    </main>
  );
}
