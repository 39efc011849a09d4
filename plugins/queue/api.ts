/**
 * The queue plugin's operations, each declared once: input and answer schemas (schemas.ts),
 * error statuses, and the function that runs it (operations.ts, mutes.ts). Routes, the tools
 * `show_queue` and `render_queue` and the OpenAPI document all read these.
 */
import { defineOperation, object } from '../../kernel/operation.js';
import * as mutes from './mutes.js';
import * as ops from './operations.js';
import {
  AddMuteInput,
  AddMuteOutput,
  ListMutesOutput,
  QueueEnvelope,
  QueueFilters,
  RemoveMuteInput,
  RemoveMuteOutput,
  ShowQueueInput,
} from './schemas.js';

export const showQueue = defineOperation({
  name: 'show_queue',
  summary: 'The ranked decision queue',
  description:
    'The ranked decision queue: work items with score, signals, a suggestion (do/blocked/triage/close/approve) and a one-line why, plus questions for you, questions you asked, findings, pending captures and reviews requested from you. Page with offset=next_offset. include_policy adds the ranking weights.',
  input: ShowQueueInput,
  output: QueueEnvelope,
  run: ops.showQueue,
});

export const renderQueue = defineOperation({
  name: 'render_queue',
  summary: 'The decision queue rendered as markdown',
  description: 'The same decision queue as show_queue, rendered as markdown for a person to read.',
  input: QueueFilters,
  produces: ['text/markdown'],
  run: ops.renderQueue,
});

// ---------------------------------------------------------------- mute lists

export const listMutes = defineOperation({
  name: 'list_mutes',
  summary: "The caller's active mute list",
  description: 'The nodes you muted out of your queue items (counted as `muted`), with their optional end date. 403 without a person node.',
  input: object({}),
  output: ListMutesOutput,
  errors: [403],
  run: mutes.listMutes,
});

export const addMute = defineOperation({
  name: 'add_mute',
  summary: 'Mute a node out of your queue items',
  description:
    'Mute a node out of your queue items until you unmute it or until the start (UTC) of the `until` date. Muting again updates the date.',
  input: AddMuteInput,
  output: AddMuteOutput,
  errors: [403],
  example: { id: 'task-fix-login', until: '2026-12-24' },
  run: mutes.addMute,
});

export const removeMute = defineOperation({
  name: 'remove_mute',
  summary: 'Unmute a node',
  description: 'Take a node off your mute list; a node that is not muted is `skipped`.',
  input: RemoveMuteInput,
  output: RemoveMuteOutput,
  errors: [403],
  run: mutes.removeMute,
});
