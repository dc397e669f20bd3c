// Named volumes (issue 31, docs/volumes.md): a size-capped filesystem owned by the
// principal that created it, mounted into sandboxes by name (CreateSandboxRequest.volumes,
// policy `sandbox.volumes`): read-write into at most one live sandbox, or read-only into
// many. There is no file API on a volume: its files are reached through a sandbox that
// mounts it (the sandbox's own identity; a read-only mount refuses writes).
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
/**
 * Describes the file cleanroom/v1/volumes.proto.
 */
export const file_cleanroom_v1_volumes = /*@__PURE__*/ fileDesc("ChpjbGVhbnJvb20vdjEvdm9sdW1lcy5wcm90bxIMY2xlYW5yb29tLnYxIqQBCgZWb2x1bWUSEQoJdm9sdW1lX2lkGAEgASgJEgwKBG5hbWUYAiABKAkSDQoFb3duZXIYAyABKAkSEgoKc2l6ZV9ieXRlcxgEIAEoBBIuCgpjcmVhdGVkX2F0GAUgASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcBISCgptb3VudGVkX2J5GAYgAygJEhIKCm1vdW50ZWRfcncYByABKAgiNwoTQ3JlYXRlVm9sdW1lUmVxdWVzdBIMCgRuYW1lGAEgASgJEhIKCnNpemVfYnl0ZXMYAiABKAQiPAoUQ3JlYXRlVm9sdW1lUmVzcG9uc2USJAoGdm9sdW1lGAEgASgLMhQuY2xlYW5yb29tLnYxLlZvbHVtZSIUChJMaXN0Vm9sdW1lc1JlcXVlc3QiPAoTTGlzdFZvbHVtZXNSZXNwb25zZRIlCgd2b2x1bWVzGAEgAygLMhQuY2xlYW5yb29tLnYxLlZvbHVtZSIiChBHZXRWb2x1bWVSZXF1ZXN0Eg4KBnZvbHVtZRgBIAEoCSI5ChFHZXRWb2x1bWVSZXNwb25zZRIkCgZ2b2x1bWUYASABKAsyFC5jbGVhbnJvb20udjEuVm9sdW1lIiUKE0RlbGV0ZVZvbHVtZVJlcXVlc3QSDgoGdm9sdW1lGAEgASgJIjwKFERlbGV0ZVZvbHVtZVJlc3BvbnNlEiQKBnZvbHVtZRgBIAEoCzIULmNsZWFucm9vbS52MS5Wb2x1bWUy3wIKDVZvbHVtZVNlcnZpY2USVQoMQ3JlYXRlVm9sdW1lEiEuY2xlYW5yb29tLnYxLkNyZWF0ZVZvbHVtZVJlcXVlc3QaIi5jbGVhbnJvb20udjEuQ3JlYXRlVm9sdW1lUmVzcG9uc2USUgoLTGlzdFZvbHVtZXMSIC5jbGVhbnJvb20udjEuTGlzdFZvbHVtZXNSZXF1ZXN0GiEuY2xlYW5yb29tLnYxLkxpc3RWb2x1bWVzUmVzcG9uc2USTAoJR2V0Vm9sdW1lEh4uY2xlYW5yb29tLnYxLkdldFZvbHVtZVJlcXVlc3QaHy5jbGVhbnJvb20udjEuR2V0Vm9sdW1lUmVzcG9uc2USVQoMRGVsZXRlVm9sdW1lEiEuY2xlYW5yb29tLnYxLkRlbGV0ZVZvbHVtZVJlcXVlc3QaIi5jbGVhbnJvb20udjEuRGVsZXRlVm9sdW1lUmVzcG9uc2ViBnByb3RvMw", [file_google_protobuf_timestamp]);
/**
 * Describes the message cleanroom.v1.Volume.
 * Use `create(VolumeSchema)` to create a new message.
 */
export const VolumeSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 0);
/**
 * Describes the message cleanroom.v1.CreateVolumeRequest.
 * Use `create(CreateVolumeRequestSchema)` to create a new message.
 */
export const CreateVolumeRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 1);
/**
 * Describes the message cleanroom.v1.CreateVolumeResponse.
 * Use `create(CreateVolumeResponseSchema)` to create a new message.
 */
export const CreateVolumeResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 2);
/**
 * Describes the message cleanroom.v1.ListVolumesRequest.
 * Use `create(ListVolumesRequestSchema)` to create a new message.
 */
export const ListVolumesRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 3);
/**
 * Describes the message cleanroom.v1.ListVolumesResponse.
 * Use `create(ListVolumesResponseSchema)` to create a new message.
 */
export const ListVolumesResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 4);
/**
 * Describes the message cleanroom.v1.GetVolumeRequest.
 * Use `create(GetVolumeRequestSchema)` to create a new message.
 */
export const GetVolumeRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 5);
/**
 * Describes the message cleanroom.v1.GetVolumeResponse.
 * Use `create(GetVolumeResponseSchema)` to create a new message.
 */
export const GetVolumeResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 6);
/**
 * Describes the message cleanroom.v1.DeleteVolumeRequest.
 * Use `create(DeleteVolumeRequestSchema)` to create a new message.
 */
export const DeleteVolumeRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 7);
/**
 * Describes the message cleanroom.v1.DeleteVolumeResponse.
 * Use `create(DeleteVolumeResponseSchema)` to create a new message.
 */
export const DeleteVolumeResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_volumes, 8);
/**
 * Volumes are owned by the principal that created it; another principal's volume answers
 * `volume_not_found` exactly like one that does not exist (admins see and remove all).
 *
 * @generated from service cleanroom.v1.VolumeService
 */
export const VolumeService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_volumes, 0);
