// The part of the `electron` module the shell uses. main.ts passes the real module; the tests pass a fake
// with the same shape (test/shell.test.ts), so nothing under shell/ imports 'electron' at run time.
import type * as Electron from 'electron';

export type ElectronApi = Pick<
  typeof Electron,
  | 'app'
  | 'BrowserWindow'
  | 'dialog'
  | 'ipcMain'
  | 'Menu'
  | 'protocol'
  | 'screen'
  | 'session'
  | 'shell'
  | 'utilityProcess'
>;
