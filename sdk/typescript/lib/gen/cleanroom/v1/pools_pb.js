// Warm pools (issue 11, seed 002 WarmPoolManager): READY sandboxes kept for a template,
// handed out by Claim in well under a millisecond of server time.
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
import { file_cleanroom_v1_cleanroom } from "./cleanroom_pb.js";
/**
 * Describes the file cleanroom/v1/pools.proto.
 */
export const file_cleanroom_v1_pools = /*@__PURE__*/ fileDesc("ChhjbGVhbnJvb20vdjEvcG9vbHMucHJvdG8SDGNsZWFucm9vbS52MSJ1CgxQb29sVGVtcGxhdGUSEwoLcG9saWN5X3lhbWwYASABKAkSEQoJaW1hZ2VfcmVmGAIgASgJEiwKBmxpbWl0cxgDIAEoCzIcLmNsZWFucm9vbS52MS5SZXNvdXJjZUxpbWl0cxIPCgdydW50aW1lGAQgASgJIlEKC0F1dG9zY2FsaW5nEg8KB2VuYWJsZWQYASABKAgSFwoPaGVhZHJvb21fZmFjdG9yGAIgASgBEhgKEGludGVydmFsX3NlY29uZHMYAyABKA0ivgIKBFBvb2wSDwoHcG9vbF9pZBgBIAEoCRIMCgRuYW1lGAIgASgJEg0KBW93bmVyGAMgASgJEiwKCHRlbXBsYXRlGAQgASgLMhouY2xlYW5yb29tLnYxLlBvb2xUZW1wbGF0ZRIRCgltaW5fcmVhZHkYBSABKA0SEQoJbWF4X3JlYWR5GAYgASgNEhcKD21heF9hZ2Vfc2Vjb25kcxgHIAEoDRIQCghyZXVzYWJsZRgIIAEoCBIuCgthdXRvc2NhbGluZxgJIAEoCzIZLmNsZWFucm9vbS52MS5BdXRvc2NhbGluZxITCgtwb2xpY3lfaGFzaBgKIAEoCRIUCgxpbWFnZV9kaWdlc3QYCyABKAkSLgoKY3JlYXRlZF9hdBgMIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXAi8gEKCVBvb2xTdGF0cxINCgVyZWFkeRgBIAEoDRIPCgdjbGFpbWVkGAIgASgNEg8KB3dhcm1pbmcYAyABKA0SGQoRY2xhaW1zX3Blcl9taW51dGUYBCABKAESHAoUYXZnX2NsYWltX2xhdGVuY3lfdXMYBSABKAQSHAoUcDk5X2NsYWltX2xhdGVuY3lfdXMYBiABKAQSFAoMY2xhaW1zX3RvdGFsGAcgASgEEhQKDG1pc3Nlc190b3RhbBgIIAEoBBIUCgx0YXJnZXRfcmVhZHkYCSABKA0SGwoTcmVwbGFjZWRfZGVhZF90b3RhbBgKIAEoBCLQAQoRQ3JlYXRlUG9vbFJlcXVlc3QSDAoEbmFtZRgBIAEoCRIsCgh0ZW1wbGF0ZRgCIAEoCzIaLmNsZWFucm9vbS52MS5Qb29sVGVtcGxhdGUSEQoJbWluX3JlYWR5GAMgASgNEhEKCW1heF9yZWFkeRgEIAEoDRIXCg9tYXhfYWdlX3NlY29uZHMYBSABKA0SEAoIcmV1c2FibGUYBiABKAgSLgoLYXV0b3NjYWxpbmcYByABKAsyGS5jbGVhbnJvb20udjEuQXV0b3NjYWxpbmciNgoSQ3JlYXRlUG9vbFJlc3BvbnNlEiAKBHBvb2wYASABKAsyEi5jbGVhbnJvb20udjEuUG9vbCISChBMaXN0UG9vbHNSZXF1ZXN0Il4KEUxpc3RQb29sc1Jlc3BvbnNlEiEKBXBvb2xzGAEgAygLMhIuY2xlYW5yb29tLnYxLlBvb2wSJgoFc3RhdHMYAiADKAsyFy5jbGVhbnJvb20udjEuUG9vbFN0YXRzIiYKE0dldFBvb2xTdGF0c1JlcXVlc3QSDwoHcG9vbF9pZBgBIAEoCSJgChRHZXRQb29sU3RhdHNSZXNwb25zZRIgCgRwb29sGAEgASgLMhIuY2xlYW5yb29tLnYxLlBvb2wSJgoFc3RhdHMYAiABKAsyFy5jbGVhbnJvb20udjEuUG9vbFN0YXRzIloKE0NsYWltU2FuZGJveFJlcXVlc3QSDwoHcG9vbF9pZBgBIAEoCRIYChBhZ2VudF9wdWJsaWNfa2V5GAIgASgJEhgKEGRlbGVnYXRpb25fY2hhaW4YAyADKAkiewoUQ2xhaW1TYW5kYm94UmVzcG9uc2USJgoHc2FuZGJveBgBIAEoCzIVLmNsZWFucm9vbS52MS5TYW5kYm94EhgKEGNsYWltX2xhdGVuY3lfdXMYAiABKAQSIQoZYXR0ZXN0YXRpb25fZW52ZWxvcGVfanNvbhgDIAEoCSI9ChVSZWxlYXNlU2FuZGJveFJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIQCghyZXVzYWJsZRgCIAEoCCJAChZSZWxlYXNlU2FuZGJveFJlc3BvbnNlEiYKB3NhbmRib3gYASABKAsyFS5jbGVhbnJvb20udjEuU2FuZGJveCIlChJEZXN0cm95UG9vbFJlcXVlc3QSDwoHcG9vbF9pZBgBIAEoCSIVChNEZXN0cm95UG9vbFJlc3BvbnNlMo8ECg9XYXJtUG9vbFNlcnZpY2USTwoKQ3JlYXRlUG9vbBIfLmNsZWFucm9vbS52MS5DcmVhdGVQb29sUmVxdWVzdBogLmNsZWFucm9vbS52MS5DcmVhdGVQb29sUmVzcG9uc2USTAoJTGlzdFBvb2xzEh4uY2xlYW5yb29tLnYxLkxpc3RQb29sc1JlcXVlc3QaHy5jbGVhbnJvb20udjEuTGlzdFBvb2xzUmVzcG9uc2USVQoMR2V0UG9vbFN0YXRzEiEuY2xlYW5yb29tLnYxLkdldFBvb2xTdGF0c1JlcXVlc3QaIi5jbGVhbnJvb20udjEuR2V0UG9vbFN0YXRzUmVzcG9uc2USVQoMQ2xhaW1TYW5kYm94EiEuY2xlYW5yb29tLnYxLkNsYWltU2FuZGJveFJlcXVlc3QaIi5jbGVhbnJvb20udjEuQ2xhaW1TYW5kYm94UmVzcG9uc2USWwoOUmVsZWFzZVNhbmRib3gSIy5jbGVhbnJvb20udjEuUmVsZWFzZVNhbmRib3hSZXF1ZXN0GiQuY2xlYW5yb29tLnYxLlJlbGVhc2VTYW5kYm94UmVzcG9uc2USUgoLRGVzdHJveVBvb2wSIC5jbGVhbnJvb20udjEuRGVzdHJveVBvb2xSZXF1ZXN0GiEuY2xlYW5yb29tLnYxLkRlc3Ryb3lQb29sUmVzcG9uc2ViBnByb3RvMw", [file_google_protobuf_timestamp, file_cleanroom_v1_cleanroom]);
/**
 * Describes the message cleanroom.v1.PoolTemplate.
 * Use `create(PoolTemplateSchema)` to create a new message.
 */
export const PoolTemplateSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 0);
/**
 * Describes the message cleanroom.v1.Autoscaling.
 * Use `create(AutoscalingSchema)` to create a new message.
 */
export const AutoscalingSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 1);
/**
 * Describes the message cleanroom.v1.Pool.
 * Use `create(PoolSchema)` to create a new message.
 */
export const PoolSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 2);
/**
 * Describes the message cleanroom.v1.PoolStats.
 * Use `create(PoolStatsSchema)` to create a new message.
 */
export const PoolStatsSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 3);
/**
 * Describes the message cleanroom.v1.CreatePoolRequest.
 * Use `create(CreatePoolRequestSchema)` to create a new message.
 */
export const CreatePoolRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 4);
/**
 * Describes the message cleanroom.v1.CreatePoolResponse.
 * Use `create(CreatePoolResponseSchema)` to create a new message.
 */
export const CreatePoolResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 5);
/**
 * Describes the message cleanroom.v1.ListPoolsRequest.
 * Use `create(ListPoolsRequestSchema)` to create a new message.
 */
export const ListPoolsRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 6);
/**
 * Describes the message cleanroom.v1.ListPoolsResponse.
 * Use `create(ListPoolsResponseSchema)` to create a new message.
 */
export const ListPoolsResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 7);
/**
 * Describes the message cleanroom.v1.GetPoolStatsRequest.
 * Use `create(GetPoolStatsRequestSchema)` to create a new message.
 */
export const GetPoolStatsRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 8);
/**
 * Describes the message cleanroom.v1.GetPoolStatsResponse.
 * Use `create(GetPoolStatsResponseSchema)` to create a new message.
 */
export const GetPoolStatsResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 9);
/**
 * Describes the message cleanroom.v1.ClaimSandboxRequest.
 * Use `create(ClaimSandboxRequestSchema)` to create a new message.
 */
export const ClaimSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 10);
/**
 * Describes the message cleanroom.v1.ClaimSandboxResponse.
 * Use `create(ClaimSandboxResponseSchema)` to create a new message.
 */
export const ClaimSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 11);
/**
 * Describes the message cleanroom.v1.ReleaseSandboxRequest.
 * Use `create(ReleaseSandboxRequestSchema)` to create a new message.
 */
export const ReleaseSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 12);
/**
 * Describes the message cleanroom.v1.ReleaseSandboxResponse.
 * Use `create(ReleaseSandboxResponseSchema)` to create a new message.
 */
export const ReleaseSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 13);
/**
 * Describes the message cleanroom.v1.DestroyPoolRequest.
 * Use `create(DestroyPoolRequestSchema)` to create a new message.
 */
export const DestroyPoolRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 14);
/**
 * Describes the message cleanroom.v1.DestroyPoolResponse.
 * Use `create(DestroyPoolResponseSchema)` to create a new message.
 */
export const DestroyPoolResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_pools, 15);
/**
 * Pools are owned by the principal that created them; others get `pool_not_found`.
 *
 * @generated from service cleanroom.v1.WarmPoolService
 */
export const WarmPoolService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_pools, 0);
