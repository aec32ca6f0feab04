// A streaming answer: text arrives token by token and is written to the database at a bounded rate, at
// most once per interval (250 ms by default) and when the answer finishes. A crash loses at most the text
// of the last interval; on the next start the message, still marked 'streaming', becomes 'interrupted'
// (MessagesRepo.recoverInterrupted) with the text of its last write.
import type { CitedPage, Message } from '../api/contract.ts';
import type { Scheduler } from './clock.ts';
import { StorageError } from './errors.ts';

export type FinalStatus = 'complete' | 'interrupted' | 'cancelled' | 'failed';

export interface FinishDetails {
  /** The final text, when it differs from what was appended (e.g. trimmed). */
  text?: string;
  tokens?: number | null;
  tokensPerSecond?: number | null;
  pageRefs?: number[];
  /** The pages and sentences the answer's attention went to (null: none measured). */
  citations?: CitedPage[] | null;
  error?: string | null;
  /** Tokens the message occupies in the session's KV cache (its prompt wrapping included). */
  cacheTokens?: number | null;
}

/** What a StreamingAnswer needs from the messages repository. */
export interface StreamHost {
  /** Writes the text of a message still marked streaming. */
  writeText(id: string, text: string): void;
  finish(id: string, text: string, status: FinalStatus, details: FinishDetails): Message | null;
  release(answer: StreamingAnswer): void;
}

export const DEFAULT_FLUSH_INTERVAL_MS = 250;

export class StreamingAnswer {
  private text_: string;
  private dirty = false;
  private closed_ = false;
  private lastWriteAt: number;
  private timer: unknown = null;
  private writes_ = 0;

  constructor(
    private readonly host: StreamHost,
    readonly id: string,
    readonly chatId: string,
    /** The version of the answer being written (1 for a new answer; a revision's own number). */
    readonly version: number,
    initialText: string,
    private readonly scheduler: Scheduler,
    private readonly intervalMs: number,
    private readonly onError: (e: unknown) => void,
  ) {
    this.text_ = initialText;
    // The row was just inserted with the initial text: that counts as a write.
    this.lastWriteAt = scheduler.now();
  }

  /** All text appended so far (written or not). */
  get text(): string {
    return this.text_;
  }

  /** True once finished (or dropped, e.g. when its chat was truncated). */
  get closed(): boolean {
    return this.closed_;
  }

  /** Text appended since the last write. */
  get pending(): boolean {
    return this.dirty;
  }

  /** How many times the text was written while streaming (for diagnostics and tests). */
  get writes(): number {
    return this.writes_;
  }

  append(piece: string): void {
    if (this.closed_) throw new StorageError('BAD_REQUEST', `message ${this.id} is no longer streaming`);
    if (!piece) return;
    this.text_ += piece;
    this.dirty = true;
    const now = this.scheduler.now();
    const due = this.lastWriteAt + this.intervalMs;
    if (now >= due) {
      this.flushNow();
    } else if (this.timer === null) {
      this.timer = this.scheduler.setTimeout(() => {
        this.timer = null;
        this.flushNow();
      }, due - now);
    }
  }

  /** Writes pending text now. */
  flush(): void {
    if (this.closed_) return;
    this.cancelTimer();
    this.flushNow();
  }

  /** Writes the final text and status (and the answer's numbers); returns the message, or null if it was deleted meanwhile. */
  finish(status: FinalStatus, details: FinishDetails = {}): Message | null {
    if (this.closed_) throw new StorageError('BAD_REQUEST', `message ${this.id} is already finished`);
    if ((status as string) === 'streaming')
      throw new StorageError('BAD_REQUEST', `a finished message cannot be 'streaming'`);
    if (details.text !== undefined) this.text_ = details.text;
    const message = this.host.finish(this.id, this.text_, status, details);
    this.close();
    return message;
  }

  /** Stops without writing anything more (the row was deleted or is being replaced). */
  drop(): void {
    if (!this.closed_) this.close();
  }

  private close(): void {
    this.cancelTimer();
    this.closed_ = true;
    this.dirty = false;
    this.host.release(this);
  }

  private cancelTimer(): void {
    if (this.timer !== null) {
      this.scheduler.clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private flushNow(): void {
    if (!this.dirty || this.closed_) return;
    try {
      this.host.writeText(this.id, this.text_);
      this.dirty = false;
      this.writes_++;
      this.lastWriteAt = this.scheduler.now();
    } catch (e) {
      // Called from a timer too, so never throw: report it; the text stays pending for the next write.
      this.onError(e);
    }
  }
}
