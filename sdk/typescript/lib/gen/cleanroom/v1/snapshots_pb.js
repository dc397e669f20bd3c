// Pause/resume, filesystem snapshots and memory checkpoints of sandboxes (issues 12, 33).
//
// A snapshot (`snap_…`) is a sandbox's writable state (image upper layer, /workspace,
// /tmp, /root, /dev/shm) plus its compiled policy, image digest and limits, stored
// content-addressed under the server's state dir and owned by the caller. It never holds
// secret values, placeholders or the sandbox CA: `CreateSandboxRequest.from_snapshot`
// restores into a sandbox that gets fresh ones. Several sandboxes restored from one
// snapshot share it as a read-only lower layer (fork).
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
import { file_cleanroom_v1_cleanroom } from "./cleanroom_pb.js";
/**
 * Describes the file cleanroom/v1/snapshots.proto.
 */
export const file_cleanroom_v1_snapshots = /*@__PURE__*/ fileDesc("ChxjbGVhbnJvb20vdjEvc25hcHNob3RzLnByb3RvEgxjbGVhbnJvb20udjEi1QIKCkNoZWNrcG9pbnQSFQoNY2hlY2twb2ludF9pZBgBIAEoCRIZChFzb3VyY2Vfc2FuZGJveF9pZBgCIAEoCRIPCgdydW50aW1lGAMgASgJEhcKD3J1bnRpbWVfdmVyc2lvbhgEIAEoCRITCgtwb2xpY3lfaGFzaBgFIAEoCRIRCglpbWFnZV9yZWYYBiABKAkSFAoMaW1hZ2VfZGlnZXN0GAcgASgJEiwKBmxpbWl0cxgIIAEoCzIcLmNsZWFucm9vbS52MS5SZXNvdXJjZUxpbWl0cxISCgpzaXplX2J5dGVzGAkgASgEEhIKCmZpbGVfY291bnQYCiABKAQSFgoOY29udGVudF9kaWdlc3QYCyABKAkSLgoKY3JlYXRlZF9hdBgMIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASDwoHZHJvcHBlZBgNIAMoCSLrAgoIU25hcHNob3QSEwoLc25hcHNob3RfaWQYASABKAkSGQoRc291cmNlX3NhbmRib3hfaWQYAiABKAkSGgoScGFyZW50X3NuYXBzaG90X2lkGAMgASgJEhMKC3BvbGljeV9oYXNoGAQgASgJEhEKCWltYWdlX3JlZhgFIAEoCRIUCgxpbWFnZV9kaWdlc3QYBiABKAkSLAoGbGltaXRzGAcgASgLMhwuY2xlYW5yb29tLnYxLlJlc291cmNlTGltaXRzEhIKCnNpemVfYnl0ZXMYCCABKAQSEgoKZmlsZV9jb3VudBgJIAEoBBIWCg5jb250ZW50X2RpZ2VzdBgKIAEoCRIuCgpjcmVhdGVkX2F0GAsgASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcBI3ChR2b2x1bWVzX25vdF9jYXB0dXJlZBgeIAMoCzIZLmNsZWFucm9vbS52MS5Wb2x1bWVNb3VudCIpChNQYXVzZVNhbmRib3hSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkiPgoUUGF1c2VTYW5kYm94UmVzcG9uc2USJgoHc2FuZGJveBgBIAEoCzIVLmNsZWFucm9vbS52MS5TYW5kYm94IioKFFJlc3VtZVNhbmRib3hSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkiPwoVUmVzdW1lU2FuZGJveFJlc3BvbnNlEiYKB3NhbmRib3gYASABKAsyFS5jbGVhbnJvb20udjEuU2FuZGJveCIrChVDcmVhdGVTbmFwc2hvdFJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCSJCChZDcmVhdGVTbmFwc2hvdFJlc3BvbnNlEigKCHNuYXBzaG90GAEgASgLMhYuY2xlYW5yb29tLnYxLlNuYXBzaG90IikKEkdldFNuYXBzaG90UmVxdWVzdBITCgtzbmFwc2hvdF9pZBgBIAEoCSI/ChNHZXRTbmFwc2hvdFJlc3BvbnNlEigKCHNuYXBzaG90GAEgASgLMhYuY2xlYW5yb29tLnYxLlNuYXBzaG90IhYKFExpc3RTbmFwc2hvdHNSZXF1ZXN0IkIKFUxpc3RTbmFwc2hvdHNSZXNwb25zZRIpCglzbmFwc2hvdHMYASADKAsyFi5jbGVhbnJvb20udjEuU25hcHNob3QiLAoVUmVtb3ZlU25hcHNob3RSZXF1ZXN0EhMKC3NuYXBzaG90X2lkGAEgASgJIkIKFlJlbW92ZVNuYXBzaG90UmVzcG9uc2USKAoIc25hcHNob3QYASABKAsyFi5jbGVhbnJvb20udjEuU25hcHNob3QiRQoYQ2hlY2twb2ludFNhbmRib3hSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSFQoNbGVhdmVfcnVubmluZxgCIAEoCCJ0ChlDaGVja3BvaW50U2FuZGJveFJlc3BvbnNlEhUKDWNoZWNrcG9pbnRfaWQYASABKAkSEgoKc2l6ZV9ieXRlcxgCIAEoBBIsCgpjaGVja3BvaW50GAMgASgLMhguY2xlYW5yb29tLnYxLkNoZWNrcG9pbnQiLQoUR2V0Q2hlY2twb2ludFJlcXVlc3QSFQoNY2hlY2twb2ludF9pZBgBIAEoCSJFChVHZXRDaGVja3BvaW50UmVzcG9uc2USLAoKY2hlY2twb2ludBgBIAEoCzIYLmNsZWFucm9vbS52MS5DaGVja3BvaW50IhgKFkxpc3RDaGVja3BvaW50c1JlcXVlc3QiSAoXTGlzdENoZWNrcG9pbnRzUmVzcG9uc2USLQoLY2hlY2twb2ludHMYASADKAsyGC5jbGVhbnJvb20udjEuQ2hlY2twb2ludCIwChdEZWxldGVDaGVja3BvaW50UmVxdWVzdBIVCg1jaGVja3BvaW50X2lkGAEgASgJIkgKGERlbGV0ZUNoZWNrcG9pbnRSZXNwb25zZRIsCgpjaGVja3BvaW50GAEgASgLMhguY2xlYW5yb29tLnYxLkNoZWNrcG9pbnQyrQcKD1NuYXBzaG90U2VydmljZRJVCgxQYXVzZVNhbmRib3gSIS5jbGVhbnJvb20udjEuUGF1c2VTYW5kYm94UmVxdWVzdBoiLmNsZWFucm9vbS52MS5QYXVzZVNhbmRib3hSZXNwb25zZRJYCg1SZXN1bWVTYW5kYm94EiIuY2xlYW5yb29tLnYxLlJlc3VtZVNhbmRib3hSZXF1ZXN0GiMuY2xlYW5yb29tLnYxLlJlc3VtZVNhbmRib3hSZXNwb25zZRJbCg5DcmVhdGVTbmFwc2hvdBIjLmNsZWFucm9vbS52MS5DcmVhdGVTbmFwc2hvdFJlcXVlc3QaJC5jbGVhbnJvb20udjEuQ3JlYXRlU25hcHNob3RSZXNwb25zZRJSCgtHZXRTbmFwc2hvdBIgLmNsZWFucm9vbS52MS5HZXRTbmFwc2hvdFJlcXVlc3QaIS5jbGVhbnJvb20udjEuR2V0U25hcHNob3RSZXNwb25zZRJYCg1MaXN0U25hcHNob3RzEiIuY2xlYW5yb29tLnYxLkxpc3RTbmFwc2hvdHNSZXF1ZXN0GiMuY2xlYW5yb29tLnYxLkxpc3RTbmFwc2hvdHNSZXNwb25zZRJbCg5SZW1vdmVTbmFwc2hvdBIjLmNsZWFucm9vbS52MS5SZW1vdmVTbmFwc2hvdFJlcXVlc3QaJC5jbGVhbnJvb20udjEuUmVtb3ZlU25hcHNob3RSZXNwb25zZRJkChFDaGVja3BvaW50U2FuZGJveBImLmNsZWFucm9vbS52MS5DaGVja3BvaW50U2FuZGJveFJlcXVlc3QaJy5jbGVhbnJvb20udjEuQ2hlY2twb2ludFNhbmRib3hSZXNwb25zZRJYCg1HZXRDaGVja3BvaW50EiIuY2xlYW5yb29tLnYxLkdldENoZWNrcG9pbnRSZXF1ZXN0GiMuY2xlYW5yb29tLnYxLkdldENoZWNrcG9pbnRSZXNwb25zZRJeCg9MaXN0Q2hlY2twb2ludHMSJC5jbGVhbnJvb20udjEuTGlzdENoZWNrcG9pbnRzUmVxdWVzdBolLmNsZWFucm9vbS52MS5MaXN0Q2hlY2twb2ludHNSZXNwb25zZRJhChBEZWxldGVDaGVja3BvaW50EiUuY2xlYW5yb29tLnYxLkRlbGV0ZUNoZWNrcG9pbnRSZXF1ZXN0GiYuY2xlYW5yb29tLnYxLkRlbGV0ZUNoZWNrcG9pbnRSZXNwb25zZWIGcHJvdG8z", [file_google_protobuf_timestamp, file_cleanroom_v1_cleanroom]);
/**
 * Describes the message cleanroom.v1.Checkpoint.
 * Use `create(CheckpointSchema)` to create a new message.
 */
export const CheckpointSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 0);
/**
 * Describes the message cleanroom.v1.Snapshot.
 * Use `create(SnapshotSchema)` to create a new message.
 */
export const SnapshotSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 1);
/**
 * Describes the message cleanroom.v1.PauseSandboxRequest.
 * Use `create(PauseSandboxRequestSchema)` to create a new message.
 */
export const PauseSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 2);
/**
 * Describes the message cleanroom.v1.PauseSandboxResponse.
 * Use `create(PauseSandboxResponseSchema)` to create a new message.
 */
export const PauseSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 3);
/**
 * Describes the message cleanroom.v1.ResumeSandboxRequest.
 * Use `create(ResumeSandboxRequestSchema)` to create a new message.
 */
export const ResumeSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 4);
/**
 * Describes the message cleanroom.v1.ResumeSandboxResponse.
 * Use `create(ResumeSandboxResponseSchema)` to create a new message.
 */
export const ResumeSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 5);
/**
 * Describes the message cleanroom.v1.CreateSnapshotRequest.
 * Use `create(CreateSnapshotRequestSchema)` to create a new message.
 */
export const CreateSnapshotRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 6);
/**
 * Describes the message cleanroom.v1.CreateSnapshotResponse.
 * Use `create(CreateSnapshotResponseSchema)` to create a new message.
 */
export const CreateSnapshotResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 7);
/**
 * Describes the message cleanroom.v1.GetSnapshotRequest.
 * Use `create(GetSnapshotRequestSchema)` to create a new message.
 */
export const GetSnapshotRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 8);
/**
 * Describes the message cleanroom.v1.GetSnapshotResponse.
 * Use `create(GetSnapshotResponseSchema)` to create a new message.
 */
export const GetSnapshotResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 9);
/**
 * Describes the message cleanroom.v1.ListSnapshotsRequest.
 * Use `create(ListSnapshotsRequestSchema)` to create a new message.
 */
export const ListSnapshotsRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 10);
/**
 * Describes the message cleanroom.v1.ListSnapshotsResponse.
 * Use `create(ListSnapshotsResponseSchema)` to create a new message.
 */
export const ListSnapshotsResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 11);
/**
 * Describes the message cleanroom.v1.RemoveSnapshotRequest.
 * Use `create(RemoveSnapshotRequestSchema)` to create a new message.
 */
export const RemoveSnapshotRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 12);
/**
 * Describes the message cleanroom.v1.RemoveSnapshotResponse.
 * Use `create(RemoveSnapshotResponseSchema)` to create a new message.
 */
export const RemoveSnapshotResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 13);
/**
 * Describes the message cleanroom.v1.CheckpointSandboxRequest.
 * Use `create(CheckpointSandboxRequestSchema)` to create a new message.
 */
export const CheckpointSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 14);
/**
 * Describes the message cleanroom.v1.CheckpointSandboxResponse.
 * Use `create(CheckpointSandboxResponseSchema)` to create a new message.
 */
export const CheckpointSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 15);
/**
 * Describes the message cleanroom.v1.GetCheckpointRequest.
 * Use `create(GetCheckpointRequestSchema)` to create a new message.
 */
export const GetCheckpointRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 16);
/**
 * Describes the message cleanroom.v1.GetCheckpointResponse.
 * Use `create(GetCheckpointResponseSchema)` to create a new message.
 */
export const GetCheckpointResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 17);
/**
 * Describes the message cleanroom.v1.ListCheckpointsRequest.
 * Use `create(ListCheckpointsRequestSchema)` to create a new message.
 */
export const ListCheckpointsRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 18);
/**
 * Describes the message cleanroom.v1.ListCheckpointsResponse.
 * Use `create(ListCheckpointsResponseSchema)` to create a new message.
 */
export const ListCheckpointsResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 19);
/**
 * Describes the message cleanroom.v1.DeleteCheckpointRequest.
 * Use `create(DeleteCheckpointRequestSchema)` to create a new message.
 */
export const DeleteCheckpointRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 20);
/**
 * Describes the message cleanroom.v1.DeleteCheckpointResponse.
 * Use `create(DeleteCheckpointResponseSchema)` to create a new message.
 */
export const DeleteCheckpointResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 21);
/**
 * @generated from service cleanroom.v1.SnapshotService
 */
export const SnapshotService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_snapshots, 0);
