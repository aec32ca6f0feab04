// The application menu: the platform's usual roles (the macOS app menu, Edit, View, Window, Help) and
// Folio's own actions, which go to the renderer as menu events (bridge.ts, MenuAction) for it to act on.
import type { MenuItemConstructorOptions } from 'electron';

import type { MenuAction } from '../api/bridge.ts';

export interface MenuOptions {
  platform: NodeJS.Platform;
  appName: string;
  /** Sends a Folio action to the renderer (opening the window first when there is none). */
  action(action: MenuAction): void;
  /** Opens the library folder in the file manager. */
  openLibraryFolder(): void;
  /** Reload and developer tools entries (not in the packaged app). */
  devTools: boolean;
}

/** Accelerators of Folio's actions. */
export const ACCELERATORS: Record<MenuAction, string> = {
  'open-document': 'CmdOrCtrl+O',
  'new-chat': 'CmdOrCtrl+N',
  settings: 'CmdOrCtrl+,',
  inspector: 'CmdOrCtrl+I',
};

export function menuTemplate(o: MenuOptions): MenuItemConstructorOptions[] {
  const mac = o.platform === 'darwin';
  const item = (label: string, action: MenuAction): MenuItemConstructorOptions => ({
    id: action,
    label,
    accelerator: ACCELERATORS[action],
    click: () => o.action(action),
  });
  const sep: MenuItemConstructorOptions = { type: 'separator' };

  const appMenu: MenuItemConstructorOptions = {
    label: o.appName,
    submenu: [
      { role: 'about' },
      sep,
      item('Settings…', 'settings'),
      sep,
      { role: 'services' },
      sep,
      { role: 'hide' },
      { role: 'hideOthers' },
      { role: 'unhide' },
      sep,
      { role: 'quit' },
    ],
  };
  const fileMenu: MenuItemConstructorOptions = {
    label: 'File',
    submenu: [
      item('Open Document…', 'open-document'),
      item('New Chat', 'new-chat'),
      sep,
      ...(mac
        ? [{ role: 'close' } as MenuItemConstructorOptions]
        : [item('Settings…', 'settings'), sep, { role: 'quit' } as MenuItemConstructorOptions]),
    ],
  };
  const viewMenu: MenuItemConstructorOptions = {
    label: 'View',
    submenu: [
      item('Inspector', 'inspector'),
      sep,
      ...(o.devTools
        ? ([
            { role: 'reload' },
            { role: 'forceReload' },
            { role: 'toggleDevTools' },
            sep,
          ] as MenuItemConstructorOptions[])
        : []),
      { role: 'resetZoom' },
      { role: 'zoomIn' },
      { role: 'zoomOut' },
      sep,
      { role: 'togglefullscreen' },
    ],
  };
  const helpMenu: MenuItemConstructorOptions = {
    label: 'Help',
    role: 'help',
    submenu: [
      { label: 'Show Library Folder', click: () => o.openLibraryFolder() },
      ...(mac ? [] : [sep, { role: 'about' } as MenuItemConstructorOptions]),
    ],
  };
  return [
    ...(mac ? [appMenu] : []),
    fileMenu,
    { label: 'Edit', role: 'editMenu' },
    viewMenu,
    { label: 'Window', role: 'windowMenu' },
    helpMenu,
  ];
}
