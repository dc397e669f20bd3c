// Inbound traffic into sandboxes (docs/network.md "Inbound"): a port of a sandbox exposed
// as a URL served by the Cleanroom server itself (`/_sandbox/<exposure-id>/…` on its
// listeners), reachable with the owner's API credentials or the exposure's signed,
// expiring token. Raw TCP (`cleanroom port-forward`) is an HTTP/1.1 Upgrade on
// `/_portforward/<sandbox-id>/<port>`, not an RPC.
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
/**
 * Describes the file cleanroom/v1/inbound.proto.
 */
export const file_cleanroom_v1_inbound = /*@__PURE__*/ fileDesc("ChpjbGVhbnJvb20vdjEvaW5ib3VuZC5wcm90bxIMY2xlYW5yb29tLnYxIqUBCg9TYW5kYm94RXhwb3N1cmUSCgoCaWQYASABKAkSEgoKc2FuZGJveF9pZBgCIAEoCRIMCgRwb3J0GAMgASgNEgwKBHBhdGgYBCABKAkSDQoFdG9rZW4YBSABKAkSEgoKY3JlYXRlZF9hdBgGIAEoAxISCgpleHBpcmVzX2F0GAcgASgDEhIKCmNyZWF0ZWRfYnkYCCABKAkSCwoDdXJsGAkgASgJIlEKGEV4cG9zZVNhbmRib3hQb3J0UmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEgwKBHBvcnQYAiABKA0SEwoLdHRsX3NlY29uZHMYAyABKAQiTAoZRXhwb3NlU2FuZGJveFBvcnRSZXNwb25zZRIvCghleHBvc3VyZRgBIAEoCzIdLmNsZWFucm9vbS52MS5TYW5kYm94RXhwb3N1cmUiQAoaVW5leHBvc2VTYW5kYm94UG9ydFJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIOCgZ0YXJnZXQYAiABKAkiTQobVW5leHBvc2VTYW5kYm94UG9ydFJlc3BvbnNlEi4KB3JlbW92ZWQYASADKAsyHS5jbGVhbnJvb20udjEuU2FuZGJveEV4cG9zdXJlIjEKG0xpc3RTYW5kYm94RXhwb3N1cmVzUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJIlAKHExpc3RTYW5kYm94RXhwb3N1cmVzUmVzcG9uc2USMAoJZXhwb3N1cmVzGAEgAygLMh0uY2xlYW5yb29tLnYxLlNhbmRib3hFeHBvc3VyZTLRAgoOSW5ib3VuZFNlcnZpY2USZAoRRXhwb3NlU2FuZGJveFBvcnQSJi5jbGVhbnJvb20udjEuRXhwb3NlU2FuZGJveFBvcnRSZXF1ZXN0GicuY2xlYW5yb29tLnYxLkV4cG9zZVNhbmRib3hQb3J0UmVzcG9uc2USagoTVW5leHBvc2VTYW5kYm94UG9ydBIoLmNsZWFucm9vbS52MS5VbmV4cG9zZVNhbmRib3hQb3J0UmVxdWVzdBopLmNsZWFucm9vbS52MS5VbmV4cG9zZVNhbmRib3hQb3J0UmVzcG9uc2USbQoUTGlzdFNhbmRib3hFeHBvc3VyZXMSKS5jbGVhbnJvb20udjEuTGlzdFNhbmRib3hFeHBvc3VyZXNSZXF1ZXN0GiouY2xlYW5yb29tLnYxLkxpc3RTYW5kYm94RXhwb3N1cmVzUmVzcG9uc2ViBnByb3RvMw");
/**
 * Describes the message cleanroom.v1.SandboxExposure.
 * Use `create(SandboxExposureSchema)` to create a new message.
 */
export const SandboxExposureSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 0);
/**
 * Describes the message cleanroom.v1.ExposeSandboxPortRequest.
 * Use `create(ExposeSandboxPortRequestSchema)` to create a new message.
 */
export const ExposeSandboxPortRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 1);
/**
 * Describes the message cleanroom.v1.ExposeSandboxPortResponse.
 * Use `create(ExposeSandboxPortResponseSchema)` to create a new message.
 */
export const ExposeSandboxPortResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 2);
/**
 * Describes the message cleanroom.v1.UnexposeSandboxPortRequest.
 * Use `create(UnexposeSandboxPortRequestSchema)` to create a new message.
 */
export const UnexposeSandboxPortRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 3);
/**
 * Describes the message cleanroom.v1.UnexposeSandboxPortResponse.
 * Use `create(UnexposeSandboxPortResponseSchema)` to create a new message.
 */
export const UnexposeSandboxPortResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 4);
/**
 * Describes the message cleanroom.v1.ListSandboxExposuresRequest.
 * Use `create(ListSandboxExposuresRequestSchema)` to create a new message.
 */
export const ListSandboxExposuresRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 5);
/**
 * Describes the message cleanroom.v1.ListSandboxExposuresResponse.
 * Use `create(ListSandboxExposuresResponseSchema)` to create a new message.
 */
export const ListSandboxExposuresResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 6);
/**
 * @generated from service cleanroom.v1.InboundService
 */
export const InboundService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_inbound, 0);
