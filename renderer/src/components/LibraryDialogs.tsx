// The library's questions: a file the library has already (open that one, or keep both), and the password
// of an encrypted PDF (said again, when the last one was wrong). The password box is cleared once sent.
import { useState } from 'react';

import { closeDuplicate, resolveDuplicate, useDuplicate } from '../stores/duplicate.ts';
import { closePassword, submitPassword, useLibrary } from '../stores/library.ts';
import { Modal } from './Dialogs.tsx';

export function DuplicateDialog() {
  const q = useDuplicate((s) => s.question);
  if (!q) return null;
  return (
    <Modal title="Already in the library" onClose={closeDuplicate} labelledBy="duplicate-title">
      <h2 id="duplicate-title">Already in the library</h2>
      <p>
        {q.fileName} has the same content as “{q.existingTitle}”, which is in the library already.
      </p>
      <div className="modal-actions">
        <button type="button" className="button" onClick={() => void resolveDuplicate('keep')}>
          Keep both
        </button>
        <button type="button" className="button primary" data-autofocus onClick={() => void resolveDuplicate('open')}>
          Open the existing one
        </button>
      </div>
    </Modal>
  );
}

export function PasswordDialog() {
  const q = useLibrary((s) => s.password);
  const [password, setPassword] = useState('');
  if (!q) return null;
  const close = () => {
    setPassword('');
    closePassword();
  };
  return (
    <Modal title="Password needed" onClose={close} labelledBy="password-title">
      <form
        className="password-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!password) return;
          const p = password;
          setPassword('');
          void submitPassword(p);
        }}
      >
        <h2 id="password-title">Password needed</h2>
        <p>
          {q.wrong
            ? `The password was wrong. Try ${q.fileName}’s password again.`
            : `${q.fileName} is protected by a password. Folio uses it to read the file once and keeps it nowhere.`}
        </p>
        <div className={`field${q.wrong ? ' invalid' : ''}`}>
          <label htmlFor="pdf-password">Password</label>
          <input
            id="pdf-password"
            type="password"
            autoComplete="off"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            aria-invalid={q.wrong || undefined}
            data-autofocus
          />
        </div>
        <div className="modal-actions">
          <button type="button" className="button" onClick={close}>
            Cancel
          </button>
          <button type="submit" className="button primary" disabled={!password}>
            Open
          </button>
        </div>
      </form>
    </Modal>
  );
}
