// The app's settings (one object, owned by the core). Changes go through settings.update; the core's
// settings.changed event brings every window up to date.
import { create } from 'zustand';

import type { Settings, SettingsPatch } from '../../../electron/api/contract.ts';
import { api, errorMessage } from '../api/client.ts';
import { notify } from './ui.ts';

export interface SettingsState {
  settings: Settings | null;
  saving: boolean;
}

export const useSettings = create<SettingsState>()(() => ({ settings: null, saving: false }));

export function setSettings(settings: Settings): void {
  useSettings.setState({ settings });
}

export async function loadSettings(): Promise<void> {
  setSettings(await api().call('settings.get', {}));
}

export async function updateSettings(patch: SettingsPatch): Promise<boolean> {
  useSettings.setState({ saving: true });
  try {
    setSettings(await api().call('settings.update', patch));
    return true;
  } catch (e) {
    notify(`Settings were not saved: ${errorMessage(e)}`);
    return false;
  } finally {
    useSettings.setState({ saving: false });
  }
}
