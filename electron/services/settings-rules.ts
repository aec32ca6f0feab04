// What settings cannot work with the chosen model, each with the field it is about and the reason: a context
// beyond the model's trained one (read-plan.ts's maxPositions, the rule a read applies), an observation
// window or a longest answer that cannot fit the largest context a document gets. The settings service
// refuses a change that makes one of these true; the UI shows the reason at the field.
import { ApiError, type Settings } from '../api/contract.ts';
import { maxPositions } from './read-plan.ts';

/** A field as the settings object names it ('nCtx', 'compression.window'), and why its value is refused. */
export interface SettingProblem {
  field: string;
  message: string;
}

export interface ModelLimits {
  name: string;
  /** The model's trained context; null when its file does not say (nothing is checked against it then). */
  contextLength: number | null;
}

export function settingsProblems(s: Settings, model: ModelLimits | null): SettingProblem[] {
  if (!model?.contextLength) return [];
  const problems: SettingProblem[] = [];
  let positions: number;
  try {
    positions = maxPositions({ contextLength: model.contextLength }, s.nCtx);
  } catch (e) {
    problems.push({ field: 'nCtx', message: `${(e as Error).message} (${model.name})` });
    positions = model.contextLength;
  }
  const count = (n: number) => n.toLocaleString('en-US');
  if (s.compression.method !== 'full' && s.compression.window >= positions)
    problems.push({
      field: 'compression.window',
      message: `an observation window of ${count(s.compression.window)} tokens leaves no room for the document in a context of ${count(positions)}: choose fewer than ${count(positions)}`,
    });
  if (s.sampling.maxTokens > positions)
    problems.push({
      field: 'sampling.maxTokens',
      message: `an answer of ${count(s.sampling.maxTokens)} tokens cannot fit a context of ${count(positions)}: choose ${count(positions)} or fewer`,
    });
  return problems;
}

/** The fields a patch sets, as settingsProblems names them ('compression.window'). */
export function patchFields(patch: object): Set<string> {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v && typeof v === 'object' && !Array.isArray(v))
      for (const [sub, x] of Object.entries(v)) if (x !== undefined) out.add(`${k}.${sub}`);
    out.add(k);
  }
  return out;
}

/** Throws INVALID_SETTING with the first problem among `fields` (all of them when null); details name the field. */
export function refuseProblems(problems: SettingProblem[], fields: Set<string> | null): void {
  const relevant = fields ? problems.filter((p) => fields.has(p.field)) : problems;
  if (relevant.length === 0) return;
  throw new ApiError('INVALID_SETTING', `settings: ${relevant[0].field}: ${relevant[0].message}`, {
    field: relevant[0].field,
    problems: relevant,
  });
}
