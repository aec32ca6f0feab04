// How a chat's turns are written for the model (the contract's ChatStyle): one rule for the app core, the
// command line and the UI. Plain, importing nothing, so the renderer imports it as it is.

/** 'chat': a conversation (the model's chat template, else "Question: … Answer:" turns); 'completion': the
 * document and then the text as typed, which the model continues (what a base model can do). */
export const CHAT_STYLES = ['chat', 'completion'] as const;
export type ChatStyle = (typeof CHAT_STYLES)[number];

/**
 * The style a chat is written in: the one chosen for it, else by the model: completion for a model without a
 * chat template (a base model), chat otherwise (and while it is not known whether the model has one).
 */
export function chatStyleFor(chosen: ChatStyle | null | undefined, template: boolean | null): ChatStyle {
  return chosen ?? (template === false ? 'completion' : 'chat');
}

/** The longest answer of a base model (chat-format.ts answerEnds), below the settings' own longest answer: a
 * paragraph, as a reader of a chat expects; a base model rarely ends by itself, and on a small context every
 * token it adds is one the next question lacks. The settings page says so. */
export const BASE_MODEL_MAX_TOKENS = 128;
