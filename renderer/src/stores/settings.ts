// The app's settings (one object, owned by the core). Changes go through settings.update; the core's
// settings.changed event brings every window up to date.
import { create } from 'zustand';

import type { Settings, SettingsPatch } from '../../../electron/api/contract.ts';
import { api, errorCode, errorMessage } from '../api/client.ts';
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

/** A change the core refused for one field (INVALID_SETTING: a value the model cannot take), with the reason. */
export interface RefusedSetting {
  /** The field as the settings object names it: 'nCtx', 'compression.window'. */
  field: string;
  message: string;
}

function refusedSetting(e: unknown): RefusedSetting | null {
  if (errorCode(e) !== 'INVALID_SETTING') return null;
  const d = (e as { details?: { field?: unknown; problems?: { field: string; message: string }[] } }).details;
  if (typeof d?.field !== 'string') return null;
  return { field: d.field, message: d.problems?.find((p) => p.field === d.field)?.message ?? errorMessage(e) };
}

/**
 * Saves a change. A value the core refuses for a field goes to `onRefused` when given (the settings page
 * shows it at the field); any other failure is a notice.
 */
export async function updateSettings(
  patch: SettingsPatch,
  o: { onRefused?: (r: RefusedSetting) => void } = {},
): Promise<boolean> {
  useSettings.setState({ saving: true });
  try {
    setSettings(await api().call('settings.update', patch));
    return true;
  } catch (e) {
    const refused = refusedSetting(e);
    if (refused && o.onRefused) o.onRefused(refused);
    else notify(`Settings were not saved: ${errorMessage(e)}`);
    return false;
  } finally {
    useSettings.setState({ saving: false });
  }
}

/** Every setting back to its default (the model and the model folders stay). */
export async function resetSettings(): Promise<boolean> {
  useSettings.setState({ saving: true });
  try {
    setSettings(await api().call('settings.reset', {}));
    notify('Settings are back to their defaults', 'success');
    return true;
  } catch (e) {
    notify(`Settings were not reset: ${errorMessage(e)}`);
    return false;
  } finally {
    useSettings.setState({ saving: false });
  }
}
