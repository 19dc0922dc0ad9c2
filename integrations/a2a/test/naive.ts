// The control for the replica tests: a shared board store WITHOUT the
// revision check. It reads the record's revision just before writing and
// writes over whatever is there (last write wins, again when a write landed
// between its two calls), as a store that treats save as "overwrite" would.

import { Task } from "@a2a-js/sdk";
import type { ListTasksRequest, ListTasksResponse } from "@a2a-js/sdk";
import type { ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import { BoardNotFoundError, RecordNotFoundError, RevisionConflictError, type Client } from "@promptd/client";

export class LastWriteWinsStore implements TaskStore {
  constructor(private readonly client: Client, private readonly board: string) {}

  async load(taskId: string): Promise<Task | undefined> {
    try {
      const rec = await this.client.getRecord(this.board, `naive.${taskId}`);
      return Task.fromJSON(rec.payload);
    } catch (e) {
      if (e instanceof RecordNotFoundError || e instanceof BoardNotFoundError) return undefined;
      throw e;
    }
  }

  async save(task: Task): Promise<void> {
    const id = `naive.${task.id}`;
    for (;;) {
      try {
        const cur = await this.client.getRecord(this.board, id);
        await this.client.updateRecord(this.board, id, { expectedRevision: cur.revision, payload: Task.toJSON(task) });
        return;
      } catch (e) {
        if (e instanceof RevisionConflictError) continue; // someone wrote between our two calls: write over it anyway
        if (!(e instanceof RecordNotFoundError || e instanceof BoardNotFoundError)) throw e;
        await this.client.createRecord(this.board, { id, payload: Task.toJSON(task) });
        return;
      }
    }
  }

  list(_params: ListTasksRequest, _context: ServerCallContext): Promise<ListTasksResponse> {
    return Promise.resolve({ tasks: [], nextPageToken: "", pageSize: 0, totalSize: 0 });
  }
}
