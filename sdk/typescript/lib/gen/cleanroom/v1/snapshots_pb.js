// Pause/resume, filesystem snapshots and process checkpoints of sandboxes (issue 12).
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
export const file_cleanroom_v1_snapshots = /*@__PURE__*/ fileDesc("ChxjbGVhbnJvb20vdjEvc25hcHNob3RzLnByb3RvEgxjbGVhbnJvb20udjEi6wIKCFNuYXBzaG90EhMKC3NuYXBzaG90X2lkGAEgASgJEhkKEXNvdXJjZV9zYW5kYm94X2lkGAIgASgJEhoKEnBhcmVudF9zbmFwc2hvdF9pZBgDIAEoCRITCgtwb2xpY3lfaGFzaBgEIAEoCRIRCglpbWFnZV9yZWYYBSABKAkSFAoMaW1hZ2VfZGlnZXN0GAYgASgJEiwKBmxpbWl0cxgHIAEoCzIcLmNsZWFucm9vbS52MS5SZXNvdXJjZUxpbWl0cxISCgpzaXplX2J5dGVzGAggASgEEhIKCmZpbGVfY291bnQYCSABKAQSFgoOY29udGVudF9kaWdlc3QYCiABKAkSLgoKY3JlYXRlZF9hdBgLIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASNwoUdm9sdW1lc19ub3RfY2FwdHVyZWQYHiADKAsyGS5jbGVhbnJvb20udjEuVm9sdW1lTW91bnQiKQoTUGF1c2VTYW5kYm94UmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJIj4KFFBhdXNlU2FuZGJveFJlc3BvbnNlEiYKB3NhbmRib3gYASABKAsyFS5jbGVhbnJvb20udjEuU2FuZGJveCIqChRSZXN1bWVTYW5kYm94UmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJIj8KFVJlc3VtZVNhbmRib3hSZXNwb25zZRImCgdzYW5kYm94GAEgASgLMhUuY2xlYW5yb29tLnYxLlNhbmRib3giKwoVQ3JlYXRlU25hcHNob3RSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkiQgoWQ3JlYXRlU25hcHNob3RSZXNwb25zZRIoCghzbmFwc2hvdBgBIAEoCzIWLmNsZWFucm9vbS52MS5TbmFwc2hvdCIpChJHZXRTbmFwc2hvdFJlcXVlc3QSEwoLc25hcHNob3RfaWQYASABKAkiPwoTR2V0U25hcHNob3RSZXNwb25zZRIoCghzbmFwc2hvdBgBIAEoCzIWLmNsZWFucm9vbS52MS5TbmFwc2hvdCIWChRMaXN0U25hcHNob3RzUmVxdWVzdCJCChVMaXN0U25hcHNob3RzUmVzcG9uc2USKQoJc25hcHNob3RzGAEgAygLMhYuY2xlYW5yb29tLnYxLlNuYXBzaG90IiwKFVJlbW92ZVNuYXBzaG90UmVxdWVzdBITCgtzbmFwc2hvdF9pZBgBIAEoCSJCChZSZW1vdmVTbmFwc2hvdFJlc3BvbnNlEigKCHNuYXBzaG90GAEgASgLMhYuY2xlYW5yb29tLnYxLlNuYXBzaG90Ii4KGENoZWNrcG9pbnRTYW5kYm94UmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJIkYKGUNoZWNrcG9pbnRTYW5kYm94UmVzcG9uc2USFQoNY2hlY2twb2ludF9pZBgBIAEoCRISCgpzaXplX2J5dGVzGAIgASgEMpAFCg9TbmFwc2hvdFNlcnZpY2USVQoMUGF1c2VTYW5kYm94EiEuY2xlYW5yb29tLnYxLlBhdXNlU2FuZGJveFJlcXVlc3QaIi5jbGVhbnJvb20udjEuUGF1c2VTYW5kYm94UmVzcG9uc2USWAoNUmVzdW1lU2FuZGJveBIiLmNsZWFucm9vbS52MS5SZXN1bWVTYW5kYm94UmVxdWVzdBojLmNsZWFucm9vbS52MS5SZXN1bWVTYW5kYm94UmVzcG9uc2USWwoOQ3JlYXRlU25hcHNob3QSIy5jbGVhbnJvb20udjEuQ3JlYXRlU25hcHNob3RSZXF1ZXN0GiQuY2xlYW5yb29tLnYxLkNyZWF0ZVNuYXBzaG90UmVzcG9uc2USUgoLR2V0U25hcHNob3QSIC5jbGVhbnJvb20udjEuR2V0U25hcHNob3RSZXF1ZXN0GiEuY2xlYW5yb29tLnYxLkdldFNuYXBzaG90UmVzcG9uc2USWAoNTGlzdFNuYXBzaG90cxIiLmNsZWFucm9vbS52MS5MaXN0U25hcHNob3RzUmVxdWVzdBojLmNsZWFucm9vbS52MS5MaXN0U25hcHNob3RzUmVzcG9uc2USWwoOUmVtb3ZlU25hcHNob3QSIy5jbGVhbnJvb20udjEuUmVtb3ZlU25hcHNob3RSZXF1ZXN0GiQuY2xlYW5yb29tLnYxLlJlbW92ZVNuYXBzaG90UmVzcG9uc2USZAoRQ2hlY2twb2ludFNhbmRib3gSJi5jbGVhbnJvb20udjEuQ2hlY2twb2ludFNhbmRib3hSZXF1ZXN0GicuY2xlYW5yb29tLnYxLkNoZWNrcG9pbnRTYW5kYm94UmVzcG9uc2ViBnByb3RvMw", [file_google_protobuf_timestamp, file_cleanroom_v1_cleanroom]);
/**
 * Describes the message cleanroom.v1.Snapshot.
 * Use `create(SnapshotSchema)` to create a new message.
 */
export const SnapshotSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 0);
/**
 * Describes the message cleanroom.v1.PauseSandboxRequest.
 * Use `create(PauseSandboxRequestSchema)` to create a new message.
 */
export const PauseSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 1);
/**
 * Describes the message cleanroom.v1.PauseSandboxResponse.
 * Use `create(PauseSandboxResponseSchema)` to create a new message.
 */
export const PauseSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 2);
/**
 * Describes the message cleanroom.v1.ResumeSandboxRequest.
 * Use `create(ResumeSandboxRequestSchema)` to create a new message.
 */
export const ResumeSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 3);
/**
 * Describes the message cleanroom.v1.ResumeSandboxResponse.
 * Use `create(ResumeSandboxResponseSchema)` to create a new message.
 */
export const ResumeSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 4);
/**
 * Describes the message cleanroom.v1.CreateSnapshotRequest.
 * Use `create(CreateSnapshotRequestSchema)` to create a new message.
 */
export const CreateSnapshotRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 5);
/**
 * Describes the message cleanroom.v1.CreateSnapshotResponse.
 * Use `create(CreateSnapshotResponseSchema)` to create a new message.
 */
export const CreateSnapshotResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 6);
/**
 * Describes the message cleanroom.v1.GetSnapshotRequest.
 * Use `create(GetSnapshotRequestSchema)` to create a new message.
 */
export const GetSnapshotRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 7);
/**
 * Describes the message cleanroom.v1.GetSnapshotResponse.
 * Use `create(GetSnapshotResponseSchema)` to create a new message.
 */
export const GetSnapshotResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 8);
/**
 * Describes the message cleanroom.v1.ListSnapshotsRequest.
 * Use `create(ListSnapshotsRequestSchema)` to create a new message.
 */
export const ListSnapshotsRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 9);
/**
 * Describes the message cleanroom.v1.ListSnapshotsResponse.
 * Use `create(ListSnapshotsResponseSchema)` to create a new message.
 */
export const ListSnapshotsResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 10);
/**
 * Describes the message cleanroom.v1.RemoveSnapshotRequest.
 * Use `create(RemoveSnapshotRequestSchema)` to create a new message.
 */
export const RemoveSnapshotRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 11);
/**
 * Describes the message cleanroom.v1.RemoveSnapshotResponse.
 * Use `create(RemoveSnapshotResponseSchema)` to create a new message.
 */
export const RemoveSnapshotResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 12);
/**
 * Describes the message cleanroom.v1.CheckpointSandboxRequest.
 * Use `create(CheckpointSandboxRequestSchema)` to create a new message.
 */
export const CheckpointSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 13);
/**
 * Describes the message cleanroom.v1.CheckpointSandboxResponse.
 * Use `create(CheckpointSandboxResponseSchema)` to create a new message.
 */
export const CheckpointSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_snapshots, 14);
/**
 * @generated from service cleanroom.v1.SnapshotService
 */
export const SnapshotService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_snapshots, 0);
