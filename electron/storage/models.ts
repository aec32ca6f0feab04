// The user's additions to model discovery: folders to search (Settings.modelFolders) and single model
// files (models.add, or a finished download).
import type Database from 'better-sqlite3';

import { isoTime, type Scheduler } from './clock.ts';
import { writeTransaction } from './transaction.ts';

export type ModelFileSource = 'added' | 'download';

export interface ModelFileRecord {
  path: string;
  source: ModelFileSource;
  addedAt: string;
}

export class ModelsRepo {
  private readonly selectFolders;
  private readonly selectFolder;
  private readonly nextPosition;
  private readonly insertFolder;
  private readonly deleteFolder;
  private readonly deleteAllFolders;
  private readonly selectFiles;
  private readonly selectFile;
  private readonly upsertFile;
  private readonly deleteFile;

  constructor(
    private readonly db: Database.Database,
    private readonly scheduler: Scheduler,
  ) {
    this.selectFolders = db.prepare(`SELECT path, added_at AS addedAt FROM model_folders ORDER BY position`);
    this.selectFolder = db.prepare(`SELECT 1 FROM model_folders WHERE path = ?`);
    this.nextPosition = db.prepare(`SELECT COALESCE(MAX(position), 0) + 1 AS p FROM model_folders`).pluck();
    this.insertFolder = db.prepare(`INSERT INTO model_folders (path, position, added_at) VALUES (?, ?, ?)`);
    this.deleteFolder = db.prepare(`DELETE FROM model_folders WHERE path = ?`);
    this.deleteAllFolders = db.prepare(`DELETE FROM model_folders`);
    this.selectFiles = db.prepare(`SELECT path, source, added_at AS addedAt FROM model_files ORDER BY added_at, rowid`);
    this.selectFile = db.prepare(`SELECT path, source, added_at AS addedAt FROM model_files WHERE path = ?`);
    this.upsertFile = db.prepare(
      `INSERT INTO model_files (path, source, added_at) VALUES (?, ?, ?) ON CONFLICT (path) DO UPDATE SET source = excluded.source`,
    );
    this.deleteFile = db.prepare(`DELETE FROM model_files WHERE path = ?`);
  }

  /** The folders, in the user's order. */
  folders(): string[] {
    return (this.selectFolders.all() as { path: string }[]).map((r) => r.path);
  }

  /** Adds a folder at the end; false when it is already there. */
  addFolder(path: string): boolean {
    return writeTransaction(this.db, () => {
      if (this.selectFolder.get(path) !== undefined) return false;
      this.insertFolder.run(path, this.nextPosition.get() as number, isoTime(this.scheduler));
      return true;
    });
  }

  removeFolder(path: string): boolean {
    return this.deleteFolder.run(path).changes > 0;
  }

  /** Replaces the list (duplicates dropped, first one kept); a folder kept keeps its added time. */
  setFolders(paths: readonly string[]): void {
    writeTransaction(this.db, () => {
      const addedAt = new Map(
        (this.selectFolders.all() as { path: string; addedAt: string }[]).map((r) => [r.path, r.addedAt]),
      );
      this.deleteAllFolders.run();
      const now = isoTime(this.scheduler);
      let position = 1;
      for (const path of new Set(paths)) this.insertFolder.run(path, position++, addedAt.get(path) ?? now);
    });
  }

  files(): ModelFileRecord[] {
    return this.selectFiles.all() as ModelFileRecord[];
  }

  /** Records a model file; adding a known path again only updates its source. */
  addFile(path: string, source: ModelFileSource = 'added'): ModelFileRecord {
    this.upsertFile.run(path, source, isoTime(this.scheduler));
    return this.selectFile.get(path) as ModelFileRecord;
  }

  removeFile(path: string): boolean {
    return this.deleteFile.run(path).changes > 0;
  }
}
