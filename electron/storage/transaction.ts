// Every write to the library runs in a transaction that takes the write lock as it begins (BEGIN IMMEDIATE).
// Two connections write to the database (the main one and the content writer's thread, write-thread.ts): a
// deferred transaction that read first would, once the other had committed meanwhile, fail at its first write
// with SQLITE_BUSY at once (its snapshot is stale), without waiting on the busy timeout. An immediate one
// waits for the lock instead, and then reads what the other wrote.
import type Database from 'better-sqlite3';

/** Runs `fn` in an IMMEDIATE transaction on `db`: committed when it returns, rolled back when it throws. */
export function writeTransaction<T>(db: Database.Database, fn: () => T): T {
  return db.transaction(fn).immediate();
}
