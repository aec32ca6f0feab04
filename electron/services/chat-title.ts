// A chat's title from its first question, made here (no model call): the question's first line, its
// whitespace collapsed, cut at a word near TITLE_CHARS. Only an untitled chat takes one.
import { DEFAULT_CHAT_TITLE } from '../storage/chats.ts';

/** The longest title made from a question, in characters (an ellipsis marks a cut). */
export const TITLE_CHARS = 60;

/** Titles the app gave a chat itself: the default, and "Chat 3" of chats made before titles came from questions. */
export function isUntitled(title: string): boolean {
  return title === DEFAULT_CHAT_TITLE || /^Chat \d+$/.test(title);
}

/** A short title from a question; null when it has no letters or digits to make one of. */
export function titleFromQuestion(question: string): string | null {
  const line =
    question
      .split('\n')
      .map((l) => l.replace(/\s+/g, ' ').trim())
      // Markdown quote and list markers and heading hashes say nothing in a title.
      .map((l) => l.replace(/^(?:[>#*\-+]+\s*)+/, ''))
      .find((l) => /[\p{L}\p{N}]/u.test(l)) ?? '';
  if (!line) return null;
  if (line.length <= TITLE_CHARS) return line;
  const cut = line.lastIndexOf(' ', TITLE_CHARS - 1);
  return `${line.slice(0, cut > TITLE_CHARS / 2 ? cut : TITLE_CHARS - 1).replace(/[\s,;:.–-]+$/, '')}…`;
}
