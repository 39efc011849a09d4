/** Helpers of the queue tests: a server with core + leases + queue, and GET /v1/queue. */
import type { ApiResponse, TestServer } from '../../helpers/harness.js';
import { queuePlugin } from '../../../plugins/queue/index.js';
import { startLeaseServer } from '../leases/helpers.js';

export function startQueueServer(): Promise<TestServer> {
  return startLeaseServer([queuePlugin]);
}

export function queue(t: TestServer, token: string, query: string): Promise<ApiResponse> {
  return t.api('GET', `/v1/queue${query}`, { token });
}

export function ids(res: ApiResponse): string[] {
  return (res.body.items as Array<{ id: string }>).map((i) => i.id);
}
